/**
 * `text` with every occurrence of `secret`, of a `Bearer …` header value, and of a masked key (a token
 * with a run of `*`, as endpoints quote a refused key: its first and last characters; or the key's last
 * four characters after an ellipsis, `sk-ab...wxyz`) replaced by a marker. A masked key is part of the key: with the prefix and the tail, fewer characters remain to guess.
 */
export function redact(text: string, secret: string): string {
  let out = text
  // The tail of a key long enough that four characters of it are not all there is to guess.
  const tail = secret && secret.length >= 12 ? secret.slice(-4) : undefined
  if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]')
  return out
    .replace(/(Bearer\s+)[^\s"',]+/gi, '$1[redacted]')
    // Token by token, the mask anchored at the token's start: an unanchored pattern retried at every
    // position of a long token without `***` takes time quadratic in its length (an endpoint's body).
    .replace(/[^\s"',:;()<>]+/g, (token) => {
      if (token.includes('***')) return token.replace(/^.*\*{3,}[^.]*/s, '[redacted]')
      // The first ellipsis: dots after the tail (a sentence trailing off) must not hide the key before them.
      const ellipsis = tail ? firstOf(token.indexOf('...'), token.indexOf('…')) : -1
      if (ellipsis >= 0 && token.includes(tail!, ellipsis)) {
        const end = token.indexOf(tail!, ellipsis) + tail!.length
        return '[redacted]' + token.slice(end)
      }
      return token
    })
}

/** The smaller of two `indexOf` answers that were found, or -1. */
function firstOf(a: number, b: number) {
  return a < 0 ? b : b < 0 ? a : Math.min(a, b)
}
