import { realpathSync } from 'node:fs'
import { join, relative, isAbsolute, sep } from 'node:path'
import type { Context } from 'cordis'
import { provideService } from '@taskward/cordis-compat'
import { dataDirectory } from '@taskward/plugin-database'
import {
  DependencyMatcher, loadedConfig, resolveStampLimits, validateLimitConfig, type StampLimits, type StampOptions, type WorkspaceStamp,
} from '@taskward/protocol'
import { Config } from './config'
import { readWorkspace, stampWorkspace, type ReadOptions, type WorkspaceReading } from './stamp'
import type { CapturePart } from './capture'
import { StatCacheStore } from './stat-cache'

declare module 'cordis' {
  interface Context {
    workspace: WorkspaceService
  }
}

/**
 * The `workspace` service: identity stamps of a directory tree, used to bind a repair confirmation to
 * the workspace its proposal showed. See docs/workspace.md for the contract and the digest framing.
 */
export class WorkspaceService {
  static readonly provide = 'workspace'
  static Config = Config

  private readonly limitConfig: Config
  /** Which directories hold installed dependencies (`dependencyDirectories`). */
  readonly dependencies: DependencyMatcher
  private readonly cache?: StatCacheStore

  constructor(ctx: Context, config: Partial<Config> = {}) {
    // The schema already refused bad values at load; this also guards direct construction, before
    // anything is registered on the context.
    validateLimitConfig(loadedConfig('workspace', config))
    this.limitConfig = Config(config ?? {})
    this.dependencies = new DependencyMatcher(this.limitConfig.dependencyDirectories)
    if (this.limitConfig.statCache) {
      const logger = ctx.logger?.('workspace')
      let warned = false
      this.cache = new StatCacheStore(join(dataDirectory(), 'workspace-cache'), (error) => {
        // Once: a cache that cannot be kept costs speed, never correctness.
        if (!warned) logger?.warn(`the workspace stat cache is not kept: ${(error as Error)?.message ?? error}; stamps read every file`)
        warned = true
      })
      ctx.on('dispose', () => this.cache?.flush())
    }
    // Usable as soon as the plugin is applied; it holds no state that needs starting.
    provideService(ctx, 'workspace', this)
  }

  /** The limits a call without overrides runs under. */
  limits(options: Pick<StampOptions, 'maxFiles' | 'maxBytes' | 'maxDependencyEntries' | 'maxDependencyBytes'> = {}): StampLimits {
    return resolveStampLimits(this.limitConfig, options)
  }

  /**
   * Stamp `root` (captured twice). Rejects with `ARTIFACT_CHANGED`, `ARTIFACT_LIMIT`,
   * `ARTIFACT_UNSUPPORTED`, `ARTIFACT_UNAVAILABLE`, `BAD_REQUEST` (bad per-call limit) or `ABORTED`.
   * The host's data directory is left out when it lies inside `root`: it is the host's, not the
   * workspace's, and changes with every event.
   */
  async stamp(root: string, options: StampOptions = {}): Promise<WorkspaceStamp> {
    const limits = this.limits(options)
    const exclude = [...options.exclude ?? [], ...dataDirectoryWithin(root)]
    return stampWorkspace(root, limits, { ...options, exclude }, { dependencies: this.dependencies, cache: this.cache })
  }

  /**
   * One capture of `root` (see `readWorkspace`): part `all` gives the stamp digest and both part
   * digests, `own` or `dependencies` only that part's digest. Not a stamp — a caller compares it with a
   * later reading. The data directory is left out as in `stamp`.
   */
  async read(root: string, part: CapturePart = 'all', options: ReadOptions = {}): Promise<WorkspaceReading> {
    const exclude = [...options.exclude ?? [], ...dataDirectoryWithin(root)]
    return readWorkspace(root, this.limits(), part, { ...options, exclude }, { dependencies: this.dependencies, cache: this.cache })
  }

  /** Every stat-cache save started so far has finished. */
  async flush(): Promise<void> {
    await this.cache?.flush()
  }
}

/** The data directory's real path when it lies strictly inside `root` (then a stamp leaves it out). */
function dataDirectoryWithin(root: string): string[] {
  try {
    const data = realpathSync(dataDirectory())
    const rest = relative(realpathSync(root), data)
    return rest && rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest) ? [data] : []
  } catch {
    return []
  }
}
