/// A failure of a command that is no mistake in its arguments (a data
/// directory without a database, a port in use): ArgumentParser prints it
/// as `Error: …` and exits 1, without the usage a ``ValidationError`` gets.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
