import Schema from 'schemastery'
import { configInvalid, strictConfig } from '@taskward/protocol'

export interface RouteConfig {
  route: string
  baseURL: string
  apiKey: string
  model: string
  temperature?: number
  maxOutputTokens?: number
  timeoutMs: number
  maxRetries: number
}

export interface ContextConfig {
  /** Unset: what the endpoint says it serves (vLLM, Ollama), else 24000. */
  contextTokens?: number
  lowWater: number
  maxEvents: number
  toolResultChars: number
  taskStateChars: number
  reasoningChars: number
  maxStepChars: number
}

export interface Config {
  routes: RouteConfig[]
  requireKey: boolean
  name: string
  roles: { main?: string, reviewer?: string, consultation?: string }
  context: ContextConfig
  maxTokensPerTask?: number
  cachedTokenWeight: number
  transport: 'worker' | 'inline'
}

export const RouteConfig: Schema<Partial<RouteConfig>, RouteConfig> = Schema.object({
  route: Schema.string().pattern(/^[a-z0-9][a-z0-9._-]*$/i).required()
    .description('The route name sessions and the role map use (letters, digits, `.`, `_`, `-`).'),
  baseURL: Schema.string().default('https://api.openai.com/v1')
    .description('The endpoint: OpenAI, DeepSeek (https://api.deepseek.com/v1), vLLM or Ollama (http://127.0.0.1:11434/v1), OpenRouter, …'),
  apiKey: Schema.string().role('secret').default('')
    .description('The API key. Empty: read from the OPENAI_API_KEY environment variable. Never recorded or logged.'),
  model: Schema.string().min(1).default('gpt-4o-mini').description('The model name the endpoint serves.'),
  temperature: Schema.number().min(0).max(2).description('Sampling temperature; unset: the endpoint\'s default.'),
  maxOutputTokens: Schema.natural().min(1).description('Most tokens one step may generate (`max_tokens`); unset: the endpoint\'s default.'),
  timeoutMs: Schema.natural().min(100).default(120000)
    .description('Milliseconds a request may wait for the response to start, and a stream may go without a chunk, before the step fails.'),
  maxRetries: Schema.natural().max(10).default(2)
    .description('Retries of a 408/409/429/5xx answer or a connection error, with backoff that honours Retry-After.'),
}) as any

export const ContextConfig: Schema<Partial<ContextConfig>, ContextConfig> = Schema.object({
  contextTokens: Schema.natural().min(1000)
    .description('Tokens of everything one step sends (instructions, tools, recent events, task state), counted with the model\'s tokenizer or a calibrated estimate. Unset: the context the endpoint reports (vLLM max_model_len, Ollama num_ctx) less room for the answer, else 24000.'),
  lowWater: Schema.number().min(0.1).max(0.9).default(0.5)
    .description('When the window must drop entries, the share of its room kept: one large drop, so the cached prompt prefix stays put for many steps.'),
  maxEvents: Schema.natural().min(10).max(5000).default(300)
    .description('Latest session events read to build a step\'s context (the token budget trims further).'),
  toolResultChars: Schema.natural().min(200).default(4000)
    .description('Characters of one tool result (or tool argument list) shown to the model before it is cut with a marker.'),
  taskStateChars: Schema.natural().min(200).default(4000)
    .description('Characters of the supervised task\'s state (task_status) shown in the system message.'),
  reasoningChars: Schema.natural().default(1000)
    .description('Characters of an endpoint\'s `reasoning_content` kept as an excerpt (logged at debug level, never recorded whole).'),
  maxStepChars: Schema.natural().min(1000).default(8_000_000)
    .description('Characters of text and tool arguments one step may stream; past it the request is stopped (MODEL_UNAVAILABLE).'),
}) as any

// Strict like every plugin's config: an unknown key or an invalid value is CONFIG_INVALID, and the
// refusal never shows an `apiKey` (its schema is `.role('secret')`).
export const Config: Schema<Partial<Config>, Config> = strictConfig('openai', Schema.object({
  routes: Schema.array(RouteConfig).default([])
    .description('Model routes, each one endpoint + model. Sessions name a route (or `name`, which picks by role).'),
  requireKey: Schema.boolean().default(true)
    .description('true: a route without a key refuses the plugin with CONFIG_INVALID. false: such a route is skipped with one info line (cordis.yml uses this so that `npm start` without a key stays the scripted demo).'),
  name: Schema.string().pattern(/^[a-z0-9][a-z0-9._-]*$/i).default('openai')
    .description('A route that picks the route of each request by the agent\'s role through `roles`.'),
  roles: Schema.object({
    main: Schema.string().description('Route of main agents (default: the first route).'),
    reviewer: Schema.string().description('Route of reviewers (default: `main`\'s).'),
    consultation: Schema.string().description('Route of consultations (default: `main`\'s).'),
  }).default({} as any).description('Which route each agent role uses when a session names the role route (`name`).'),
  context: ContextConfig.description('What one step sends to the model (see docs/models.md, Context).'),
  maxTokensPerTask: Schema.natural().min(1)
    .description('Prompt + completion tokens a supervised task may use (main and reviewers); past it steps are refused with TOKEN_BUDGET_EXHAUSTED and the task pauses. Unset: no budget.'),
  cachedTokenWeight: Schema.number().min(0).max(1).default(0.5)
    .description('How much one prompt token the endpoint served from its cache counts against maxTokensPerTask (1: as much as any other).'),
  transport: Schema.union(['worker', 'inline']).default('worker')
    .description('Where each route runs the SDK that sends its requests and reads the streamed answers: `worker`, a thread of its own (the host\'s thread stays free for the agents\' steps); `inline`, the host\'s thread.'),
}) as any, { check: finiteNumbers })

/**
 * schemastery's `number().min().max()` lets NaN through (YAML `.nan`): a NaN `cachedTokenWeight` makes
 * every task's token count NaN, refused at its first step; a NaN `lowWater` drops the whole transcript.
 */
function finiteNumbers(config: Config) {
  const numbers: [(string | number)[], unknown][] = [
    [['cachedTokenWeight'], config.cachedTokenWeight],
    [['context', 'lowWater'], config.context.lowWater],
    ...config.routes.map((route, i): [(string | number)[], unknown] => [['routes', i, 'temperature'], route.temperature]),
  ]
  for (const [path, value] of numbers) {
    if (value !== undefined && !Number.isFinite(value)) throw configInvalid('openai', path, value, 'expected a finite number')
  }
}
