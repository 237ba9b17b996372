import type { Context } from 'cordis'
import { provideService } from '@taskward/cordis-compat'
import { loadedConfig, resolveStampLimits, validateLimitConfig, type StampLimits, type StampOptions, type WorkspaceStamp } from '@taskward/protocol'
import { Config } from './config'
import { stampWorkspace } from './stamp'

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

  constructor(ctx: Context, config: Partial<Config> = {}) {
    // The schema already refused bad values at load; this also guards direct construction, before
    // anything is registered on the context.
    validateLimitConfig(loadedConfig('workspace', config))
    this.limitConfig = Config(config ?? {})
    // Usable as soon as the plugin is applied; it holds no state that needs starting.
    provideService(ctx, 'workspace', this)
  }

  /** The limits a call without overrides runs under. */
  limits(options: Pick<StampOptions, 'maxFiles' | 'maxBytes'> = {}): StampLimits {
    return resolveStampLimits(this.limitConfig, options)
  }

  /**
   * Stamp `root` (captured twice). Rejects with `ARTIFACT_CHANGED`, `ARTIFACT_LIMIT`,
   * `ARTIFACT_UNSUPPORTED`, `ARTIFACT_UNAVAILABLE`, `BAD_REQUEST` (bad per-call limit) or `ABORTED`.
   */
  async stamp(root: string, options: StampOptions = {}): Promise<WorkspaceStamp> {
    const limits = this.limits({ maxFiles: options.maxFiles, maxBytes: options.maxBytes })
    return stampWorkspace(root, limits, options)
  }
}
