/*
 * Token counts of texts already counted, for one route. Every step lays out the whole window again,
 * and all but what is new was counted on an earlier step; with many sessions on one route the
 * windows together are the working set. Least recently used out first (an entry a live session
 * counts every step stays, however many others come and go), bounded by entries and by the
 * characters the keys hold: the memory it may take is known whatever the texts are.
 */

export interface CountCacheLimits {
  /** Texts kept at most. */
  entries: number
  /** Characters of all kept texts together at most; a text longer than a quarter of it is not kept. */
  chars: number
}

/**
 * 16,384 entries and 8 M characters. Measured: 8 M characters of 2 KB JSON texts take 9 MB of heap
 * (two-byte texts, CJK, up to twice that), 16,384 texts of 100 characters 5 MB; the old 4,096 entries
 * of any length could hold 16 M characters. 200 live sessions keep 40,000 characters (≈ 80 texts) each.
 */
export const COUNT_CACHE_LIMITS: CountCacheLimits = { entries: 16_384, chars: 8_000_000 }

export class CountCache {
  private readonly map = new Map<string, number>()
  private held = 0

  constructor(readonly limits: CountCacheLimits = COUNT_CACHE_LIMITS) {}

  /** Texts kept now. */
  get size() {
    return this.map.size
  }

  /** Characters of the texts kept now. */
  get chars() {
    return this.held
  }

  /** The count of `text`, if kept (it becomes the most recently used). */
  get(text: string): number | undefined {
    const tokens = this.map.get(text)
    if (tokens !== undefined) {
      this.map.delete(text)
      this.map.set(text, tokens)
    }
    return tokens
  }

  set(text: string, tokens: number) {
    if (text.length * 4 > this.limits.chars || this.map.has(text)) return
    this.map.set(text, tokens)
    this.held += text.length
    while (this.map.size > this.limits.entries || this.held > this.limits.chars) {
      const oldest: string = this.map.keys().next().value!
      this.map.delete(oldest)
      this.held -= oldest.length
    }
  }
}
