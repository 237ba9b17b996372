import { expect } from 'chai'
import { countCjk, openAIEncoding, StepAssembler, TokenCounter, usageTokens } from '../src'
import { textTokens, loadEncoding, type Encoder } from '../src/tokens'

/** A text of random runs from `alphabet` (letters, marks, digits, punctuation, spaces, CJK, emoji). */
function runs(random: () => number, length: number) {
  const alphabet = ['a', 'Zq', 'é', '\u0301', '1', '٣', ' ', '\n', '!', '"', '{}', '中文', '😀', '\\"', 'path/to/file.ts']
  let text = ''
  while (text.length < length) {
    const piece = alphabet[Math.floor(random() * alphabet.length)]
    text += piece.repeat(1 + Math.floor(random() * (random() < 0.2 ? 90 : 6)))
  }
  return text
}

/** A seeded generator (mulberry32): the same texts on every run. */
function seeded(seed: number) {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('token counts', () => {
  it('OpenAI models get their own encoding; other models the calibrated estimate', () => {
    expect(openAIEncoding('gpt-4o-mini')).to.equal('o200k_base')
    expect(openAIEncoding('openai/gpt-5')).to.equal('o200k_base')
    expect(openAIEncoding('o3-mini')).to.equal('o200k_base')
    expect(openAIEncoding('gpt-4-turbo')).to.equal('cl100k_base')
    expect(openAIEncoding('deepseek-chat')).to.equal(undefined)
    expect(openAIEncoding('qwen2.5-coder:7b')).to.equal(undefined)
    expect(new TokenCounter('deepseek-chat').exact).to.equal(false)
  })

  it('counts English with the tokenizer, and never less than one token a CJK character', async () => {
    const exact = await new TokenCounter('gpt-4o').ready()
    // ≈ 4 characters a token for English prose.
    const english = 'The scheduler starts the first node whose dependencies have passed. '.repeat(20)
    expect(exact.count(english) / english.length).to.be.within(0.15, 0.3)
    const estimated = await new TokenCounter('qwen2.5').ready()
    const cjk = '调度器启动第一个依赖已通过的节点。'.repeat(20)
    expect(estimated.count(cjk)).to.be.at.least(countCjk(cjk))
    // The old ≈ 4 characters a token counted this a quarter of that.
    expect(estimated.count(cjk)).to.be.greaterThan(cjk.length / 4 * 3)
  })

  it('counts the tool schemas, and special-token text as plain text (never a refusal)', async () => {
    const counter = await new TokenCounter('gpt-4o').ready()
    const tools = [{ type: 'function', function: { name: 'read', description: 'Read a file in the workspace.', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } }]
    expect(counter.tools(tools)).to.be.greaterThan(20)
    expect(counter.count('before <|endoftext|> after')).to.be.greaterThan(3)
  })

  it('a long run (letters, punctuation, spaces, emoji, combining marks) is counted in pieces, close to its whole count', async () => {
    // Whole, each of these takes seconds (BPE is quadratic in a run): a model could stall every step with one.
    const counter = await new TokenCounter('gpt-4o').ready()
    const run = 'abcdefghij'.repeat(20_000)
    expect(counter.count(run)).to.be.within(run.length / 10, run.length / 2)
    for (const text of ['!'.repeat(100_000), ' '.repeat(100_000), '😀'.repeat(40_000), 'e\u0301'.repeat(50_000), '\u0301'.repeat(100_000)]) {
      expect(counter.count(text)).to.be.within(1, text.length)
    }
  })

  it('cached counts are the uncached ones, and the cache stays within its entries and characters', async () => {
    const counter = await new TokenCounter('gpt-4o', 8, { entries: 40, chars: 6000 }).ready()
    const encoder = await loadEncoding('o200k_base')
    const random = seeded(7)
    const texts = Array.from({ length: 150 }, () => runs(random, 1 + Math.floor(random() * 900)))
    for (let i = 0; i < 3000; i++) {
      // Recent texts come back often (as a window's do), old ones now and then: hits and evictions both.
      const text = texts[random() < 0.7 ? Math.floor(random() * 150) : Math.floor(random() * 20)]
      expect(counter.count(text)).to.equal(textTokens(encoder, text, true))
      expect(counter.cache.size).to.be.at.most(40)
      expect(counter.cache.chars).to.be.at.most(6000)
    }
    // A text longer than a quarter of the characters is counted, not kept.
    const long = 'word '.repeat(400)
    expect(counter.count(long)).to.equal(textTokens(encoder, long, true))
    expect(counter.cache.get(long)).to.equal(undefined)
  })

  it('a text counted on every step stays cached however many other texts come and go', async () => {
    // Each step counts the whole window again: with 200 sessions on a route, first-in-first-out
    // evicted what every live session counts each step, and every step encoded its window again.
    const counter = await new TokenCounter('gpt-4o').ready()
    const hot = `{"seq":3,"result":"${'the first node whose dependencies passed review, '.repeat(4)}"}`
    const encoder = (counter as any).encoder as Encoder
    let encoded = 0
    ;(counter as any).encoder = (text: string) => (text.includes('"seq":3,') && encoded++, encoder(text))
    for (let i = 0; i < 20_000; i++) {
      counter.count(`{"seq":${i + 10},"result":"step ${i} of another session's window, counted once"}`)
      if (i % 10 === 0) counter.count(hot)
    }
    expect(encoded).to.equal(1)
  })

  it('calibrates to what the endpoint reports, within bounds', () => {
    const counter = new TokenCounter('llama3.1')
    expect(counter.ratio).to.equal(1)
    for (let i = 0; i < 8; i++) counter.observe(1000, 1200)
    expect(counter.ratio).to.be.closeTo(1.2, 1e-9)
    expect(counter.calibrated(1000)).to.equal(1200)
    // One absurd report among recent steps moves it, bounded.
    for (let i = 0; i < 8; i++) counter.observe(1000, 100_000)
    expect(counter.ratio).to.equal(4)
  })
})

describe('cached prompt tokens', () => {
  it('are read from OpenAI\'s prompt_tokens_details and DeepSeek\'s prompt_cache_hit_tokens', () => {
    const openai = new StepAssembler({ reasoningChars: 0 })
    openai.push({ choices: [], usage: { prompt_tokens: 1000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 896 } } })
    expect(openai.finish().usage).to.deep.equal({ promptTokens: 1000, completionTokens: 5, cachedTokens: 896 })
    const deepseek = new StepAssembler({ reasoningChars: 0 })
    deepseek.push({ choices: [], usage: { prompt_tokens: 1000, completion_tokens: 5, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 360 } })
    expect(deepseek.finish().usage?.cachedTokens).to.equal(640)
    // Never more than the prompt, never negative or garbage.
    const odd = new StepAssembler({ reasoningChars: 0 })
    odd.push({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 99 } } })
    expect(odd.finish().usage?.cachedTokens).to.equal(10)
    const bad = new StepAssembler({ reasoningChars: 0 })
    bad.push({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: -3 } } })
    expect(bad.finish().usage).to.not.have.property('cachedTokens')
  })

  it('count against maxTokensPerTask with their weight', () => {
    const data = { promptTokens: 1000, completionTokens: 100, cachedTokens: 800 }
    expect(usageTokens(data, 1)).to.equal(1100)
    expect(usageTokens(data, 0.5)).to.equal(200 + 400 + 100)
    expect(usageTokens(data, 0)).to.equal(300)
    // A report claiming more cached than prompt tokens counts no more than the prompt as cached.
    expect(usageTokens({ promptTokens: 10, completionTokens: 0, cachedTokens: 1e9 }, 0)).to.equal(0)
  })
})

describe('context-length refusals (pure)', () => {
  it('are recognised in every dialect, with the limit and the request size they name', async () => {
    const { contextRefusal } = await import('../src')
    const { contextRefusalBody } = await import('@taskward/testkit')
    for (const dialect of ['openai', 'deepseek', 'vllm', 'vllm-nested', 'llamacpp'] as const) {
      const { status, body } = contextRefusalBody(dialect, 4552, 6793)
      expect(contextRefusal(status, JSON.stringify(body)), dialect).to.deep.equal({ limit: 4552, requested: 6793 })
    }
    expect(contextRefusal(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}')).to.deep.equal({ limit: undefined, requested: undefined })
    // A 5xx or another 400 is not one.
    expect(contextRefusal(500, "This model's maximum context length is 4096 tokens")).to.equal(undefined)
    expect(contextRefusal(400, '{"error":{"message":"temperature must be at most 2"}}')).to.equal(undefined)
  })

  it('what the endpoint reserves for the completion is left free on the retry (DeepSeek\'s default max_tokens)', async () => {
    const { contextRefusal, RouteContext } = await import('../src')
    const { contextRefusalBody } = await import('@taskward/testkit')
    const { status, body } = contextRefusalBody('deepseek', 65536, 40000, 32768)
    const refusal = contextRefusal(status, JSON.stringify(body))!
    expect(refusal).to.deep.equal({ limit: 65536, requested: 72768, completion: 32768 })
    const route = new RouteContext(100_000, undefined)
    route.learn(refusal.limit!, 'a refusal', refusal.completion)
    expect(route.size().promptTokens).to.equal(65536 - 32768)
    // A configured maxOutputTokens is what is asked for: it is the reserve.
    const asked = new RouteContext(100_000, 1000)
    asked.learn(refusal.limit!, 'a refusal', refusal.completion)
    expect(asked.size().promptTokens).to.equal(64536)
  })
})
