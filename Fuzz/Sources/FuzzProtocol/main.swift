import Foundation
import FuzzChecks
import FuzzDriver

@main
enum FuzzProtocol {
    /// Hands the command line to libFuzzer, which runs ``fuzzProtocol(_:_:)``
    /// on each input it makes or is given.
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzProtocol))
    }
}
