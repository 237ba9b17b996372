import { TaskwardError } from '../errors'

/**
 * Stamp limits. "Entries" are the directories, regular files and symbolic links below the root (the
 * root itself and the root `.git` do not count); "bytes" are the sizes of those regular files. Entries in
 * dependency directories count against limits of their own. A walk that would pass a limit fails;
 * nothing is ever left out of a stamp to stay under one.
 */
export const DEFAULT_MAX_ENTRIES = 10_000
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024
/**
 * Dependency directories (`node_modules`, `.venv`…) count against limits of their own, sized for real
 * projects: this repository after `npm ci` has ~23,000 entries there, large monorepos a few hundred
 * thousand; 16 GiB holds a CUDA-sized Python environment.
 */
export const DEFAULT_MAX_DEPENDENCY_ENTRIES = 1_000_000
export const DEFAULT_MAX_DEPENDENCY_BYTES = 16 * 1024 * 1024 * 1024

export interface StampLimitConfig {
  repairMaxFiles?: number
  repairMaxBytes?: number
  dependencyMaxEntries?: number
  dependencyMaxBytes?: number
}

export interface StampLimitOverrides {
  maxFiles?: number
  maxBytes?: number
  maxDependencyEntries?: number
  maxDependencyBytes?: number
}

export type StampLimitName = 'entries' | 'bytes' | 'dependencyEntries' | 'dependencyBytes'
type ConfigKey = keyof StampLimitConfig
type OptionKey = keyof StampLimitOverrides

/** One limit in force, and where its value came from (so the error can say what to change). */
export interface StampLimit {
  value: number
  configKey: ConfigKey
  option: OptionKey
  source: 'default' | 'config' | 'call'
}

/** `entries`/`bytes` count what lies outside dependency directories, the `dependency…` ones what lies inside. */
export interface StampLimits {
  entries: StampLimit
  bytes: StampLimit
  dependencyEntries: StampLimit
  dependencyBytes: StampLimit
}

/** Each limit: its config key, per-call option and default. */
const LIMITS: readonly { name: StampLimitName, configKey: ConfigKey, option: OptionKey, fallback: number }[] = [
  { name: 'entries', configKey: 'repairMaxFiles', option: 'maxFiles', fallback: DEFAULT_MAX_ENTRIES },
  { name: 'bytes', configKey: 'repairMaxBytes', option: 'maxBytes', fallback: DEFAULT_MAX_BYTES },
  { name: 'dependencyEntries', configKey: 'dependencyMaxEntries', option: 'maxDependencyEntries', fallback: DEFAULT_MAX_DEPENDENCY_ENTRIES },
  { name: 'dependencyBytes', configKey: 'dependencyMaxBytes', option: 'maxDependencyBytes', fallback: DEFAULT_MAX_DEPENDENCY_BYTES },
]

export function isPositiveSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0
}

/** Refuses a configured limit that is not a positive safe integer (`CONFIG_INVALID`). */
export function validateLimitConfig(config: StampLimitConfig): void {
  for (const { configKey: key } of LIMITS) {
    const value = config[key]
    if (value !== undefined && !isPositiveSafeInteger(value)) {
      throw new TaskwardError('CONFIG_INVALID',
        `Workspace config ${key} must be a positive whole number (at most ${Number.MAX_SAFE_INTEGER}), got ${String(value)}. Fix the workspace plugin's config and reload it.`,
        { key, value })
    }
  }
}

/**
 * The limits for one stamp: per-call overrides win over config, config over the defaults. Both are
 * validated; a bad per-call value is `BAD_REQUEST` naming the option.
 */
export function resolveStampLimits(config: StampLimitConfig = {}, overrides: StampLimitOverrides = {}): StampLimits {
  validateLimitConfig(config)
  for (const { option } of LIMITS) {
    const value = overrides[option]
    if (value !== undefined && !isPositiveSafeInteger(value)) {
      throw new TaskwardError('BAD_REQUEST',
        `Stamp option ${option} must be a positive whole number (at most ${Number.MAX_SAFE_INTEGER}), got ${String(value)}. Pass a valid value or leave it out to use the configured limit.`,
        { option, value })
    }
  }
  const pick = ({ option, configKey, fallback }: typeof LIMITS[number]): StampLimit => {
    if (overrides[option] !== undefined) return { value: overrides[option]!, configKey, option, source: 'call' }
    if (config[configKey] !== undefined) return { value: config[configKey]!, configKey, option, source: 'config' }
    return { value: fallback, configKey, option, source: 'default' }
  }
  return Object.fromEntries(LIMITS.map((limit) => [limit.name, pick(limit)])) as unknown as StampLimits
}

/** A path, or an entry whose path is decoded only when an error names it. */
export type EntryPath = string | { readonly path: string }

/**
 * Counts one walk against its limits as it proceeds, so a tree that is too large fails at the first
 * entry or file that passes a limit rather than after it has been read.
 */
export class StampBudget {
  /** Entries and bytes outside dependency directories. */
  entries = 0
  bytes = 0
  /** Entries and bytes inside dependency directories (the directory itself included). */
  dependencyEntries = 0
  dependencyBytes = 0

  constructor(readonly limits: StampLimits) {}

  /** Count one entry (directory, regular file or link); `path` names it in the error (an entry's `path` is read only then). */
  addEntry(path: EntryPath, dependency = false): void {
    const name = dependency ? 'dependencyEntries' : 'entries'
    if (this[name] + 1 > this.limits[name].value) throw this.exceeded(name, path, this[name] + 1)
    this[name]++
  }

  /** Count a regular file's size before its content is read. */
  addFileBytes(size: number | bigint, path: EntryPath, dependency = false): void {
    const name = dependency ? 'dependencyBytes' : 'bytes'
    const total = BigInt(this[name]) + BigInt(size)
    if (total > BigInt(this.limits[name].value)) throw this.exceeded(name, path, total)
    this[name] = Number(total)
  }

  private exceeded(name: StampLimitName, entry: EntryPath, reached: number | bigint): TaskwardError {
    const path = typeof entry === 'string' ? entry : entry.path
    const limit = this.limits[name]
    const what = {
      entries: 'entries (files, directories and links) outside dependency directories',
      bytes: 'bytes of file content outside dependency directories',
      dependencyEntries: 'entries (files, directories and links) in dependency directories',
      dependencyBytes: 'bytes of file content in dependency directories',
    }[name]
    const from = limit.source === 'call' ? `the ${limit.option} option of this call` : limit.source === 'config' ? `config ${limit.configKey}` : `the default (config ${limit.configKey})`
    return new TaskwardError('ARTIFACT_LIMIT',
      `The workspace has more than ${limit.value} ${what}, the limit set by ${from}; the walk stopped at ${path}. `
      + `Nothing is left out of a stamp to fit: raise ${limit.configKey} in the workspace plugin's config, or stamp a smaller directory.`,
      { limit: name, value: limit.value, configKey: limit.configKey, option: limit.option, source: limit.source, path, reached: Number(reached) })
  }
}
