import Foundation
import Mustache

/// Renders the console's templates (``ConsoleTemplates``).
///
/// Every template starts with the pragma that selects ``ConsoleHTML``:
/// the engine's own HTML escaping works on characters, so a quote followed
/// by a combining mark would be one character that is not a quote and go
/// out unescaped; ``ConsoleHTML`` escapes each Unicode scalar.
struct ConsolePages: Sendable {
    private let library: MustacheLibrary

    /// The name the console's content type is registered under.
    private static let contentTypeName = "CUMULUS_CONSOLE_HTML"

    /// Registers the content type once, before the first template is parsed.
    private static let registered: Void = MustacheContentTypes.register(ConsoleHTML(), named: contentTypeName)

    init() {
        _ = Self.registered
        var library = MustacheLibrary()
        for (name, text) in ConsoleTemplates.all {
            do {
                try library.register("{{% CONTENT_TYPE: \(Self.contentTypeName)}}" + text, named: name)
            } catch {
                preconditionFailure("Internal inconsistency: the console template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// The page `name` with `values`; `session` shows the sign-out form.
    func render(_ name: String, title: String, session: ConsoleSession?, _ values: [String: Any] = [:]) -> String {
        var values = values
        values["title"] = title
        if let session { values["session"] = ["csrf": session.csrfToken] }
        guard let html = library.render(values, withTemplate: name) else {
            preconditionFailure("Internal inconsistency: no console template \(name)")
        }
        return html
    }
}

/// HTML escaping by Unicode scalar, for the console's templates.
struct ConsoleHTML: MustacheContentType {
    func escapeText(_ text: String) -> String {
        SharePage.escaped(text)
    }
}
