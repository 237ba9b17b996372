/**
 * One queue per key: `run(key, fn)` starts `fn` after every earlier `fn` of the same key settled.
 * The supervisor serializes transitions per session with it, so that read-check-append is atomic
 * with respect to other transitions of that session.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve()
    const run = before.then(fn)
    const tail = run.catch(() => {})
    this.tails.set(key, tail)
    // Forget settled queues so that the map does not grow with every session ever touched.
    tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return run
  }
}
