import Foundation

/// The one thread a ``SQLiteStorage`` runs its transactions on: a task
/// executor whose jobs run in order on a thread of its own, so that SQLite's
/// blocking calls (a COMMIT's fsync, a busy wait) never hold one of Swift's
/// cooperative threads, and a transaction's statements follow one another
/// without a hop between threads.
///
/// The thread starts with the first job and ends once ``stop()`` was called
/// and no job is left; a job enqueued after that starts a new one.
final class SQLiteStorageThread: TaskExecutor, @unchecked Sendable {
    private let name: String
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var running = false
    private var stopping = false
    private var current: pthread_t?

    init(name: String) {
        self.name = name
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if !running {
            running = true
            stopping = false
            let thread = Thread { [self] in loop() }
            thread.name = name
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Whether the caller runs on this executor's thread.
    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let current else { return false }
        return pthread_equal(current, pthread_self()) != 0
    }

    /// Lets the thread end once its jobs are done.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        current = pthread_self()
        condition.unlock()
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                running = false
                current = nil
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: executor) }
        }
    }
}
