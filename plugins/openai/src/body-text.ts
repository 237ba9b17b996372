/**
 * A request body as JSON text, built from the texts of its messages and tools made once each: a step
 * sends its whole window again (all but what is new was in the previous request), and serializing
 * it whole was most of what handing a request to the route's thread cost the host. The text is
 * exactly `JSON.stringify(body)` as long as a message or tool list is not changed after it was first
 * serialized — none is: a layout makes new message objects for whatever it shows otherwise (a cut,
 * a note shown whole), and the tool list is the route's, replaced when the tools change.
 */
const texts = new WeakMap<object, string>()

function textOf(value: object): string {
  let text = texts.get(value)
  if (text === undefined) {
    text = JSON.stringify(value)
    texts.set(value, text)
  }
  return text
}

/** `JSON.stringify(body)` for a body whose `messages` (an array) is its last key. */
export function bodyText(body: Record<string, unknown>): string {
  const keys = Object.keys(body)
  // Any other shape: serialized whole (never made by the route, but the result must be right).
  const messages = body.messages
  if (keys.at(-1) !== 'messages' || !Array.isArray(messages) || (body.tools !== undefined && !Array.isArray(body.tools))) return JSON.stringify(body)
  let head = '{'
  for (const key of keys.slice(0, -1)) {
    const value = body[key]
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue
    head += `${JSON.stringify(key)}:${key === 'tools' ? textOf(value as object) : JSON.stringify(value)},`
  }
  let list = ''
  for (const [index, message] of messages.entries()) list += (index ? ',' : '') + (message && typeof message === 'object' ? textOf(message) : JSON.stringify(message) ?? 'null')
  return `${head}"messages":[${list}]}`
}
