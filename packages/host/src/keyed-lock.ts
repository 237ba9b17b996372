/**
 * One queue per key: `run(key, fn)` starts `fn` once every earlier `fn` of that key has settled.
 * Plugins serialize their read-check-append steps per session with it (supervisor transitions, repair
 * decisions, recovery attempts), so that two concurrent requests can never both act on the same state.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn)
    const tail = run.catch(() => {})
    this.tails.set(key, tail)
    // Forget settled queues so that the map does not grow with every session ever touched.
    tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return run
  }
}
