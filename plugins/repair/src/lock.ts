/**
 * One queue per key: `run(key, fn)` starts `fn` once every earlier `fn` of that key settled. Repair
 * decisions of one session (propose, confirm, decline) run one at a time, so that two clicks can
 * never both write a receipt or a reopen.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn)
    const tail = run.catch(() => {})
    this.tails.set(key, tail)
    tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return run
  }
}
