import Foundation
import FuzzChecks
import FuzzDriver

@main
enum FuzzCodec {
    /// Hands the command line to libFuzzer, which runs ``fuzzCodec(_:_:)``
    /// on each input it makes or is given. `FuzzCodec --write-seeds
    /// DIRECTORY` writes the seed inputs of both fuzzers instead.
    static func main() async throws {
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--write-seeds" {
            try await Seeds.write(to: arguments[2])
            return
        }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzCodec))
    }
}
