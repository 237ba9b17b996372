/**
 * A request body as JSON text, built from the texts of its messages and tools made once each: a step
 * sends its whole window again (all but what is new was in the previous request), and serializing
 * it whole was most of what handing a request to the route's thread cost the host. The text is
 * exactly `JSON.stringify(body)`: only objects that cannot change are kept — frozen messages (the
 * layout freezes every message it keeps from step to step: `frozen`) and the route's frozen tool
 * list — and whatever else is serialized as it is now.
 */
const texts = new WeakMap<object, string>()
/** Objects `frozen` froze whole (`Object.isFrozen` says nothing of what they hold). */
const whole = new WeakSet<object>()

function textOf(value: object): string {
  if (!whole.has(value)) return JSON.stringify(value)
  let text = texts.get(value)
  if (text === undefined) {
    text = JSON.stringify(value)
    texts.set(value, text)
  }
  return text
}

const hasToJSON = (value: unknown) => !!value && (typeof value === 'object' || typeof value === 'function') && typeof (value as { toJSON?: unknown }).toJSON === 'function'

/** `JSON.stringify(body)` for a body whose `messages` (an array) is its last key. */
export function bodyText(body: Record<string, unknown>): string {
  const keys = Object.keys(body)
  const messages = body.messages
  // Any other shape, and any `toJSON` the parts could not honour as the whole does (its key, an
  // undefined answer): serialized whole (never made by the route, but the result must be right).
  if (keys.at(-1) !== 'messages' || !Array.isArray(messages) || (body.tools !== undefined && !Array.isArray(body.tools))
    || hasToJSON(body) || keys.some((key) => hasToJSON(body[key])) || messages.some(hasToJSON)) return JSON.stringify(body)
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

/** Whether `frozen` froze `value` whole: nothing in it can change. */
export const isFrozenWhole = (value: object) => whole.has(value)

/** `value` frozen, and every object in it: what `bodyText` may keep the text of. Returns `value`. */
export function frozen<T>(value: T): T {
  freezeAll(value)
  if (value && typeof value === 'object') whole.add(value)
  return value
}

function freezeAll(value: unknown) {
  if (!value || typeof value !== 'object') return
  Object.freeze(value)
  for (const inner of Object.values(value)) freezeAll(inner)
}
