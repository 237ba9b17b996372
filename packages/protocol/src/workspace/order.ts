/**
 * Walk order. Names are compared as raw bytes (what the filesystem stores), so the order does not
 * depend on locale, Unicode normalization or how a platform decodes names.
 */

/** The one name skipped, and only directly below the root: the repository's own metadata. */
export const ROOT_EXCLUDED_NAME = '.git'

const SEPARATOR = 0x2f // '/'
const excluded = new TextEncoder().encode(ROOT_EXCLUDED_NAME)

export function compareNameBytes(a: Uint8Array, b: Uint8Array): number {
  // Byte by byte, unsigned, a shorter prefix first: what Buffer.compare does, natively.
  return Buffer.compare(a, b)
}

/**
 * The names of one directory in walk order. At the root (`atRoot`), `.git` is dropped; anywhere else it
 * is ordinary content. Returns a new array.
 */
export function walkOrder<T extends Uint8Array>(names: readonly T[], atRoot: boolean): T[] {
  const kept = atRoot ? names.filter((name) => !bytesEqual(name, excluded)) : names.slice()
  return kept.sort(compareNameBytes)
}

/** `parent/name` as bytes; the root's children have no prefix. */
export function childPath(parent: Uint8Array, name: Uint8Array): Uint8Array {
  if (!parent.length) return name
  const path = new Uint8Array(parent.length + 1 + name.length)
  path.set(parent, 0)
  path[parent.length] = SEPARATOR
  path.set(name, parent.length + 1)
  return path
}

function bytesEqual(a: Uint8Array, b: Uint8Array) {
  return a.length === b.length && compareNameBytes(a, b) === 0
}
