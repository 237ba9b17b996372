/**
 * `text` with every occurrence of `secret`, of a `Bearer …` header value, and of a masked key (a token
 * with a run of `*`, as endpoints quote a refused key: its first and last characters) replaced by a
 * marker. A masked key is part of the key: with the prefix and the tail, fewer characters remain to guess.
 */
export function redact(text: string, secret: string): string {
  let out = text
  if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]')
  return out
    .replace(/(Bearer\s+)[^\s"',]+/gi, '$1[redacted]')
    // Token by token, the mask anchored at the token's start: an unanchored pattern retried at every
    // position of a long token without `***` takes time quadratic in its length (an endpoint's body).
    .replace(/[^\s"',:;()<>]+/g, (token) => token.includes('***') ? token.replace(/^.*\*{3,}[^.]*/s, '[redacted]') : token)
}
