/**
 * A bounded capture of a process's output: the first and the last `limit / 2` bytes are kept, what
 * lies between is counted and replaced by one marker line. A check that prints gigabytes cannot
 * exhaust the host, and the tail — where test runners summarize failures — survives.
 */
export class BoundedOutput {
  private head: Buffer[] = []
  private headBytes = 0
  private tail: Buffer[] = []
  private tailBytes = 0
  private dropped = 0

  constructor(private readonly limit: number) {}

  push(chunk: Buffer) {
    const headRoom = Math.floor(this.limit / 2) - this.headBytes
    if (headRoom > 0) {
      const part = chunk.subarray(0, headRoom)
      this.head.push(part)
      this.headBytes += part.length
      chunk = chunk.subarray(part.length)
    }
    if (!chunk.length) return
    this.tail.push(chunk)
    this.tailBytes += chunk.length
    const tailLimit = this.limit - Math.floor(this.limit / 2)
    while (this.tailBytes > tailLimit) {
      const first = this.tail[0]
      const excess = this.tailBytes - tailLimit
      if (first.length <= excess) {
        this.tail.shift()
        this.tailBytes -= first.length
        this.dropped += first.length
      } else {
        this.tail[0] = first.subarray(excess)
        this.tailBytes -= excess
        this.dropped += excess
      }
    }
  }

  /**
   * Bytes the producer left out between two chunks (the launcher's backlog, launcher.ts). Exact as a
   * count because at least `limit` bytes follow them: they would have been dropped here anyway.
   */
  skip(bytes: number) {
    this.dropped += bytes
  }

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8')
    const tail = Buffer.concat(this.tail).toString('utf8')
    return this.dropped ? `${head}\n[… ${this.dropped} bytes of output omitted …]\n${tail}` : head + tail
  }
}
