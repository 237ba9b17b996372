import type { Tiktoken } from 'js-tiktoken/lite'

/*
 * How the loopback endpoint counts a request's prompt tokens: it renders the request the way a chat
 * template does (ChatML markers around each message, the tools as a `<tools>` block of one JSON line per
 * function, as Qwen's template on vLLM and Ollama renders them) and encodes that text — with
 * `o200k_base` for gpt-* models (what OpenAI counts), `cl100k_base` for every other model, standing in
 * for a tokenizer the adapter does not have. The adapter never renders a template, so its estimate is
 * checked against a count it did not make.
 */

const encoders = new Map<string, Promise<Tiktoken>>()

function encoder(name: 'o200k_base' | 'cl100k_base') {
  let loading = encoders.get(name)
  if (!loading) {
    loading = (async () => {
      const { Tiktoken } = await import('js-tiktoken/lite')
      const ranks = name === 'o200k_base' ? (await import('js-tiktoken/ranks/o200k_base')).default : (await import('js-tiktoken/ranks/cl100k_base')).default
      return new Tiktoken(ranks)
    })()
    encoders.set(name, loading)
  }
  return loading
}

/** The prompt of a chat request as a template renders it. */
export function renderPrompt(body: any): string {
  let out = ''
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : []
  if (tools.length) {
    out += '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>\n'
    out += tools.map((tool) => JSON.stringify(tool.function ?? tool)).join('\n')
    out += '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> tags.<|im_end|>\n'
  }
  for (const message of Array.isArray(body?.messages) ? body.messages : []) {
    let content = typeof message.content === 'string' ? message.content : message.content ? JSON.stringify(message.content) : ''
    for (const call of message.tool_calls ?? []) {
      let args: unknown = call.function?.arguments
      try {
        args = JSON.parse(String(args))
      } catch {}
      content += `\n<tool_call>\n${JSON.stringify({ name: call.function?.name, arguments: args })}\n</tool_call>`
    }
    const role = message.role === 'tool' ? 'user' : message.role
    out += message.role === 'tool' ? `<|im_start|>${role}\n<tool_response>\n${content}\n</tool_response><|im_end|>\n` : `<|im_start|>${role}\n${content}<|im_end|>\n`
  }
  return out + '<|im_start|>assistant\n'
}

/** Loads both encodings (~1.5 s once per process): `OpenAIMock.start` waits, so no answer stalls on it. */
export async function loadMockEncoders() {
  await Promise.all([encoder('o200k_base'), encoder('cl100k_base')])
}

/**
 * Encodes `text`, a long run of letters in pieces of 64 (BPE over one run is quadratic: a test that
 * sends 100 KB of `x` must not take minutes). Lines are encoded one by one, as the pieces a real
 * server's pre-tokenizer splits.
 */
function encode(enc: Tiktoken, text: string): number[] {
  const out: number[] = []
  for (const piece of text.split(/(?<=\n)/)) {
    for (const part of piece.split(/(\p{L}{64})/u)) if (part) out.push(...enc.encode(part, [], []))
  }
  return out
}

const encodingOf = (model: string) => /^gpt-/i.test(model) ? 'o200k_base' : 'cl100k_base'

/** The prompt's tokens, as the endpoint of `model` would count them. */
export async function promptTokens(body: any): Promise<number[]> {
  return encode(await encoder(encodingOf(String(body?.model ?? ''))), renderPrompt(body))
}

/** Tokens of a completion's text, as the endpoint would count them. */
export async function textTokens(model: string, text: string): Promise<number> {
  return encode(await encoder(encodingOf(model)), text).length
}

/**
 * A prefix cache like vLLM's automatic prefix caching: prompts are cached in blocks of `block` tokens;
 * a request is served from cache for the longest block-aligned prefix it shares with a recent prompt.
 */
export class PrefixCache {
  private recent: number[][] = []

  constructor(private block = 16, private keep = 16) {}

  /** Cached tokens of `tokens`, then remembers them. */
  serve(tokens: number[]): number {
    let best = 0
    for (const previous of this.recent) {
      const limit = Math.min(previous.length, tokens.length)
      let same = 0
      while (same < limit && previous[same] === tokens[same]) same++
      best = Math.max(best, same)
    }
    this.recent.push(tokens)
    if (this.recent.length > this.keep) this.recent.shift()
    // The last token is always computed (the model needs its logits).
    return Math.min(Math.floor(best / this.block) * this.block, Math.max(0, tokens.length - 1))
  }
}
