import type Schema from 'schemastery'
import { TODAY_SCHEMAS } from './schemas'
import type { CompletionReview, NodeRun, ReviewOutcome, Task, TaskPlan } from './types'

/*
 * The canonical form of a record payload: fresh plain objects holding only the fields its schema declares,
 * optional fields only when defined. Writers persist it and readers return it, so that two equal values are
 * deep-equal (`isDeepStrictEqual`) no matter which path produced them, and unknown keys never leak through.
 *
 * The form is derived from the schema, not written beside it: an object's required fields come first, then
 * its optional ones, each group in declaration order (so the JSON of a record is stable); arrays and dicts
 * are copied element by element; a constant is written as the schema's constant.
 */

type Copier = (value: any) => any

const identity: Copier = (value) => value

/** Build the copier of `schema` once; the returned function does no schema work per call. */
export function canonicalizer(schema: Schema<any, any>): Copier {
  switch (schema.type) {
    case 'object': {
      const entries = Object.entries(schema.dict ?? {})
      const ordered = [...entries.filter(([, inner]) => inner.meta?.required), ...entries.filter(([, inner]) => !inner.meta?.required)]
      const copiers = ordered.map(([, inner]) => canonicalizer(inner))
      // One straight-line function per object schema, with the field names as constants: V8 compiles it
      // like a hand-written copy (a generic loop over keys is several times slower in a fold). Required
      // fields form the object literal; optional ones are added only when defined. The names come from
      // our schemas and are embedded as JSON string literals.
      const read = (i: number) => `v[${JSON.stringify(ordered[i][0])}]`
      // null passes schemastery where a field is optional: keep it as it is rather than copy into it.
      const copy = (i: number, what: string) => copiers[i] === identity ? what : `(${what} === null ? null : c[${i}](${what}))`
      const required = ordered.map((entry, i) => [entry, i] as const).filter(([[, inner]]) => inner.meta?.required)
      const optional = ordered.map((entry, i) => [entry, i] as const).filter(([[, inner]]) => !inner.meta?.required)
      const literal = required.map(([[key], i]) => {
        // A required field is never absent in a valid value; guard the copier anyway so a malformed one cannot crash it.
        const value = copiers[i] === identity ? read(i) : `(${read(i)} === undefined ? undefined : ${copy(i, read(i))})`
        return `${JSON.stringify(key)}: ${value}`
      }).join(', ')
      const rest = optional.map(([[key], i]) => `f = ${read(i)}; if (f !== undefined) o[${JSON.stringify(key)}] = ${copy(i, 'f')};`).join('\n')
      return new Function('c', `return function copy(v) { const o = { ${literal} }; let f;\n${rest}\nreturn o }`)(copiers) as Copier
    }
    case 'array': {
      const copy = canonicalizer(schema.inner!)
      return (value) => value.map(copy)
    }
    case 'dict': {
      const copy = canonicalizer(schema.inner!)
      return (value) => {
        const out: Record<string, unknown> = {}
        // Keys are validated ids (never "__proto__"); defineProperty keeps that harmless anyway.
        for (const key of Object.keys(value)) {
          Object.defineProperty(out, key, { value: copy(value[key]), enumerable: true, writable: true, configurable: true })
        }
        return out
      }
    }
    case 'union': {
      // `optional(x)` is x | undefined: an absent value never reaches here, so copy as x.
      const members = (schema.list ?? []).filter((member) => !(member.type === 'const' && member.value === undefined))
      return members.length === 1 ? canonicalizer(members[0]) : identity
    }
    case 'const':
      return () => schema.value
    default:
      return identity
  }
}

const copyTask = canonicalizer(TODAY_SCHEMAS.task)
const copyPlan = canonicalizer(TODAY_SCHEMAS.plan)
const copyRun = canonicalizer(TODAY_SCHEMAS.run)
const copyReview = canonicalizer(TODAY_SCHEMAS.review)
const copyCompletionReview = canonicalizer(TODAY_SCHEMAS.completionReview)

export const canonicalPlan = (plan: TaskPlan): TaskPlan => copyPlan(plan)
export const canonicalReview = (review: ReviewOutcome): ReviewOutcome => copyReview(review)
export const canonicalCompletionReview = (review: CompletionReview): CompletionReview => copyCompletionReview(review)
export const canonicalRun = (run: NodeRun): NodeRun => copyRun(run)

export function canonicalRuns(runs: Record<string, NodeRun>): Record<string, NodeRun> {
  const out: Record<string, NodeRun> = {}
  for (const [id, run] of Object.entries(runs)) out[id] = canonicalRun(run)
  return out
}

/** A fresh copy of `task` with known fields only; optional fields only when defined. */
export const canonicalTask = (task: Task): Task => copyTask(task)
