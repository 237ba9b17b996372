import { expect } from 'chai'
import { TaskwardError } from '@taskward/protocol'
import { Config } from '../src'
import { KEY } from './helpers'

/** The plugin's config fails loud like every other plugin's (docs/operations.md), and never shows the key. */
describe('plugin-openai: config', () => {
  const route = { route: 'main', baseURL: 'http://127.0.0.1:1/v1', apiKey: KEY }

  function refusal(input: unknown): TaskwardError {
    try {
      ;(Config as any)(input)
    } catch (error) {
      expect(TaskwardError.is(error, 'CONFIG_INVALID'), String(error)).to.equal(true)
      return error as TaskwardError
    }
    return expect.fail('the config should be refused')
  }

  it('refuses an unknown key (a misspelt budget must not silently mean "no budget")', () => {
    const error = refusal({ routes: [route], maxTokensPerTsk: 5000 })
    expect(error.details).to.deep.include({ plugin: 'openai', key: 'maxTokensPerTsk' })
    expect(refusal({ routes: [{ ...route, timeoutMS: 10 }] }).details).to.deep.include({ key: 'routes[0].timeoutMS' })
  })

  it('never shows the API key in a refusal of an invalid route', () => {
    for (const input of [
      { routes: [{ ...route, apiKey: [KEY] }] },
      { routes: [{ ...route, apiKey: { value: KEY } }] },
      { routes: [{ ...route, temperature: 9 }] },
      { routes: [{ ...route, extra: 1 }] },
    ]) {
      const error = refusal(input)
      expect(error.message).to.not.include(KEY)
      expect(JSON.stringify(error.details ?? {})).to.not.include(KEY)
    }
  })

  it('still resolves a valid config (and the resolved config again) with its defaults', () => {
    const resolved = (Config as any)({ routes: [route], maxTokensPerTask: 5000 })
    expect(resolved.routes[0]).to.include({ route: 'main', apiKey: KEY, timeoutMs: 120000 })
    expect((Config as any)(resolved)).to.deep.equal(resolved)
  })

  it('refuses NaN (YAML .nan) where a share or a temperature goes: a NaN weight refuses the first step of every task, a NaN lowWater drops the transcript', () => {
    expect(refusal({ routes: [route], cachedTokenWeight: NaN }).details).to.deep.include({ key: 'cachedTokenWeight' })
    expect(refusal({ routes: [route], context: { lowWater: NaN } }).details).to.deep.include({ key: 'context.lowWater' })
    expect(refusal({ routes: [{ ...route, temperature: NaN }] }).details).to.deep.include({ key: 'routes[0].temperature' })
  })
})
