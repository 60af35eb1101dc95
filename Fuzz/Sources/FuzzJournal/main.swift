import Foundation
import FuzzChecks
import FuzzDriver

@main
enum FuzzJournal {
    /// Hands the command line to libFuzzer, which runs ``fuzzJournal(_:_:)``
    /// on each input it makes or is given.
    static func main() {
        // libFuzzer ends the process with exit(): the scratch files go then.
        atexit { removeJournalScratch() }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzJournal))
    }
}
