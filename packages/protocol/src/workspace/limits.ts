import { TaskwardError } from '../errors'

/**
 * Stamp limits. "Entries" are the directories and regular files below the root (the root itself and
 * the root `.git` do not count); "bytes" are the sizes of those regular files. A walk that would pass a
 * limit fails; nothing is ever left out of a stamp to stay under one.
 */
export const DEFAULT_MAX_ENTRIES = 10_000
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024

export interface StampLimitConfig {
  repairMaxFiles?: number
  repairMaxBytes?: number
}

export interface StampLimitOverrides {
  maxFiles?: number
  maxBytes?: number
}

export type StampLimitName = 'entries' | 'bytes'

/** One limit in force, and where its value came from (so the error can say what to change). */
export interface StampLimit {
  value: number
  configKey: 'repairMaxFiles' | 'repairMaxBytes'
  option: 'maxFiles' | 'maxBytes'
  source: 'default' | 'config' | 'call'
}

export interface StampLimits {
  entries: StampLimit
  bytes: StampLimit
}

export function isPositiveSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0
}

/** Refuses a configured limit that is not a positive safe integer (`CONFIG_INVALID`). */
export function validateLimitConfig(config: StampLimitConfig): void {
  for (const key of ['repairMaxFiles', 'repairMaxBytes'] as const) {
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
  for (const option of ['maxFiles', 'maxBytes'] as const) {
    const value = overrides[option]
    if (value !== undefined && !isPositiveSafeInteger(value)) {
      throw new TaskwardError('BAD_REQUEST',
        `Stamp option ${option} must be a positive whole number (at most ${Number.MAX_SAFE_INTEGER}), got ${String(value)}. Pass a valid value or leave it out to use the configured limit.`,
        { option, value })
    }
  }
  const pick = (option: 'maxFiles' | 'maxBytes', configKey: 'repairMaxFiles' | 'repairMaxBytes', fallback: number): StampLimit => {
    if (overrides[option] !== undefined) return { value: overrides[option]!, configKey, option, source: 'call' }
    if (config[configKey] !== undefined) return { value: config[configKey]!, configKey, option, source: 'config' }
    return { value: fallback, configKey, option, source: 'default' }
  }
  return {
    entries: pick('maxFiles', 'repairMaxFiles', DEFAULT_MAX_ENTRIES),
    bytes: pick('maxBytes', 'repairMaxBytes', DEFAULT_MAX_BYTES),
  }
}

/**
 * Counts one walk against its limits as it proceeds, so a tree that is too large fails at the first
 * entry or file that passes a limit rather than after it has been read.
 */
export class StampBudget {
  entries = 0
  bytes = 0

  constructor(readonly limits: StampLimits) {}

  /** Count one entry (directory or regular file); `path` names it in the error. */
  addEntry(path: string): void {
    if (this.entries + 1 > this.limits.entries.value) throw this.exceeded('entries', path, this.entries + 1)
    this.entries++
  }

  /** Count a regular file's size before its content is read. */
  addFileBytes(size: number | bigint, path: string): void {
    const total = BigInt(this.bytes) + BigInt(size)
    if (total > BigInt(this.limits.bytes.value)) throw this.exceeded('bytes', path, total)
    this.bytes = Number(total)
  }

  private exceeded(name: StampLimitName, path: string, reached: number | bigint): TaskwardError {
    const limit = this.limits[name]
    const what = name === 'entries' ? 'entries (files and directories)' : 'bytes of file content'
    const from = limit.source === 'call' ? `the ${limit.option} option of this call` : limit.source === 'config' ? `config ${limit.configKey}` : `the default (config ${limit.configKey})`
    return new TaskwardError('ARTIFACT_LIMIT',
      `The workspace has more than ${limit.value} ${what}, the limit set by ${from}; the walk stopped at ${path}. `
      + `Nothing is left out of a stamp to fit: raise ${limit.configKey} in the workspace plugin's config, or stamp a smaller directory.`,
      { limit: name, value: limit.value, configKey: limit.configKey, option: limit.option, source: limit.source, path, reached: Number(reached) })
  }
}
