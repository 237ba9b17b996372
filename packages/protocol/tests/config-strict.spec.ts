import { expect } from 'chai'
import Schema from 'schemastery'
import { configInvalid, loadedConfig, strictConfig, TaskwardError } from '../src'

function refusal(run: () => unknown): TaskwardError {
  try {
    run()
  } catch (error) {
    expect(TaskwardError.is(error, 'CONFIG_INVALID'), String(error)).to.equal(true)
    return error as TaskwardError
  }
  expect.fail('expected CONFIG_INVALID')
}

describe('protocol: strict plugin config', () => {
  const Config = strictConfig('demo', Schema.object({
    limit: Schema.natural().min(1).default(3),
    items: Schema.array(Schema.object({ id: Schema.string().required(), argv: Schema.array(Schema.string()).required() })).default([]),
    labels: Schema.dict(Schema.object({ color: Schema.string() })).default({}),
    token: Schema.string().role('secret'),
  }), {
    check(config) {
      if (config.items.length > 2) throw configInvalid('demo', ['items'], config.items.length, 'at most two items')
    },
  })

  it('resolves defaults for no config (undefined or null) and keeps valid values', () => {
    expect(Config(undefined as any)).to.deep.equal({ limit: 3, items: [], labels: {} })
    expect(Config(null as any)).to.deep.equal({ limit: 3, items: [], labels: {} })
    expect(Config({ limit: 5, labels: { a: { color: 'red' } } })).to.deep.include({ limit: 5, labels: { a: { color: 'red' } } })
  })

  it('refuses an unknown key at any depth, naming its path and value', () => {
    expect(refusal(() => Config({ limt: 2 } as any)).details).to.deep.equal({ plugin: 'demo', key: 'limt', value: 2 })
    expect(refusal(() => Config({ items: [{ id: 'a', argv: ['x'], shell: 'sh' }] } as any)).details)
      .to.deep.equal({ plugin: 'demo', key: 'items[0].shell', value: 'sh' })
    expect(refusal(() => Config({ labels: { a: { colour: 'red' } } } as any)).details)
      .to.deep.equal({ plugin: 'demo', key: 'labels.a.colour', value: 'red' })
  })

  it('turns a schema violation into CONFIG_INVALID with the key path and the value', () => {
    const error = refusal(() => Config({ limit: 0 }))
    expect(error.details).to.deep.equal({ plugin: 'demo', key: 'limit', value: 0 })
    expect(error.message).to.match(/^demo config: limit = 0 is invalid: expected number >= 1\. /)
    expect(refusal(() => Config({ items: [{ id: 'a', argv: 'npm test' }] } as any)).details)
      .to.deep.equal({ plugin: 'demo', key: 'items[0].argv', value: 'npm test' })
  })

  it('runs the cross-key check on the resolved config', () => {
    const items = [1, 2, 3].map((i) => ({ id: `i${i}`, argv: ['x'] }))
    expect(refusal(() => Config({ items })).details).to.deep.equal({ plugin: 'demo', key: 'items', value: 3 })
  })

  it('never shows a secret', () => {
    const error = refusal(() => Config({ token: 12345 } as any))
    expect(error.details).to.deep.equal({ plugin: 'demo', key: 'token' })
    expect(error.message).to.not.include('12345')
  })

  it('refuses NaN in any number, at any depth (schemastery\'s min/max let it through), naming its path', () => {
    const Weights = strictConfig('weights', Schema.object({
      weight: Schema.number().min(0).max(1).default(0.5),
      routes: Schema.array(Schema.object({ temperature: Schema.number().min(0).max(2) })).default([]),
    }))
    expect(Weights({ weight: 0.25, routes: [{ temperature: 1 }] })).to.deep.equal({ weight: 0.25, routes: [{ temperature: 1 }] })
    expect(refusal(() => Weights({ weight: NaN })).details).to.deep.include({ plugin: 'weights', key: 'weight' })
    const nested = refusal(() => Weights({ routes: [{ temperature: 1 }, { temperature: NaN }] }))
    expect(nested.details).to.deep.include({ key: 'routes[1].temperature' })
    expect(nested.message).to.match(/NaN/)
  })

  it('looks for NaN once per object: a value that refers to itself (a recursive YAML alias under any()) is no stack overflow', () => {
    const Open = strictConfig('open', Schema.object({ extra: Schema.any() }))
    const extra: any = { limit: 1 }
    extra.self = extra
    expect(Open({ extra }).extra).to.equal(extra)
    const nan: any = { limit: NaN }
    nan.self = nan
    expect(refusal(() => Open({ extra: { a: nan } })).details).to.deep.include({ key: 'extra.a.limit' })
  })

  it('loadedConfig refuses the null config cordis applies after a refused load', () => {
    expect(refusal(() => loadedConfig('demo', null)).details).to.deep.equal({ plugin: 'demo' })
    expect(loadedConfig('demo', undefined)).to.deep.equal({})
    expect(loadedConfig('demo', { a: 1 })).to.deep.equal({ a: 1 })
  })
})
