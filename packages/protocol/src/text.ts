/**
 * `index` as a place to cut `text` without splitting a UTF-16 surrogate pair: one back when the
 * character before it is the first half of a pair. A lone half is not valid Unicode, and strict JSON
 * parsers (serde_json, llama.cpp's) and tokenizers refuse a text that holds one.
 */
export function cutIndex(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length))
  const before = text.charCodeAt(index - 1)
  return before >= 0xd800 && before <= 0xdbff ? index - 1 : index
}
