/** `text` with every occurrence of `secret` (and of a `Bearer …` header value) replaced by a marker. */
export function redact(text: string, secret: string): string {
  let out = text
  if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]')
  return out.replace(/(Bearer\s+)[^\s"',]+/gi, '$1[redacted]')
}
