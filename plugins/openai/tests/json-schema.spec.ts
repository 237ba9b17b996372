import { expect } from 'chai'
import Schema from 'schemastery'
import AdmissionPlugin from '@taskward/plugin-admission'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { RepairPlugin } from '@taskward/plugin-repair'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { TestHost } from '@taskward/testkit'
import { toJsonSchema, toolParameters, type JsonSchema } from '../src'

/** Every schema node must be a plain JSON object without functions or undefined (what the API accepts). */
function assertPlainJson(schema: JsonSchema, where: string) {
  expect(JSON.parse(JSON.stringify(schema)), where).to.deep.equal(schema)
}

describe('schemastery → JSON Schema', () => {
  it('objects: required keys are those marked required, with a default too (schemastery refuses them missing); descriptions and defaults carried', () => {
    const schema = Schema.object({
      name: Schema.string().required().description('Who.'),
      count: Schema.natural().default(3).description('How many.'),
      note: Schema.string(),
      strict: Schema.boolean().required().default(false),
      ids: Schema.array(Schema.string()).required(),
    })
    expect(toJsonSchema(schema)).to.deep.equal({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Who.' },
        count: { type: 'integer', minimum: 0, description: 'How many.', default: 3 },
        note: { type: 'string' },
        strict: { type: 'boolean', default: false },
        ids: { type: 'array', items: { type: 'string' } },
      },
      required: ['name', 'strict', 'ids'],
    })
    // What the model is told it may leave out, schemastery accepts left out; what it must send, it refuses missing.
    expect(schema({ name: 'x', strict: true, ids: [] })).to.include({ count: 3 })
    for (const key of ['strict', 'ids']) expect(() => schema({ name: 'x', strict: true, ids: [], [key]: undefined } as any), key).to.throw(/missing required/)
  })

  it('strings, numbers and naturals keep their bounds, patterns and steps', () => {
    expect(toJsonSchema(Schema.string().min(2).max(9).pattern(/^a+$/))).to.deep.equal({ type: 'string', minLength: 2, maxLength: 9, pattern: '^a+$' })
    expect(toJsonSchema(Schema.number().min(-1).max(1).step(0.5))).to.deep.equal({ type: 'number', minimum: -1, maximum: 1 })
    expect(toJsonSchema(Schema.number().step(5))).to.deep.equal({ type: 'integer', multipleOf: 5 })
    expect(toJsonSchema(Schema.natural().min(1).max(200))).to.deep.equal({ type: 'integer', minimum: 1, maximum: 200 })
    expect(toJsonSchema(Schema.natural())).to.deep.equal({ type: 'integer', minimum: 0 })
    expect(toJsonSchema(Schema.percent())).to.deep.equal({ type: 'number', minimum: 0, maximum: 1 })
    expect(toJsonSchema(Schema.boolean())).to.deep.equal({ type: 'boolean' })
  })

  it('arrays, tuples, dicts', () => {
    expect(toJsonSchema(Schema.array(Schema.string()).min(1).max(4))).to.deep.equal({ type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 4 })
    expect(toJsonSchema(Schema.tuple([Schema.string().required(), Schema.number()]))).to.deep.equal({
      type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], minItems: 1, maxItems: 2, items: false,
    })
    expect(toJsonSchema(Schema.dict(Schema.number()))).to.deep.equal({ type: 'object', additionalProperties: { type: 'number' } })
  })

  it('unions of constants are enums; other unions anyOf; const; intersect allOf', () => {
    expect(toJsonSchema(Schema.union(['pass', 'revise', 'needs-user']))).to.deep.equal({ enum: ['pass', 'revise', 'needs-user'] })
    expect(toJsonSchema(Schema.union([Schema.string(), Schema.natural()]))).to.deep.equal({ anyOf: [{ type: 'string' }, { type: 'integer', minimum: 0 }] })
    expect(toJsonSchema(Schema.const('x'))).to.deep.equal({ const: 'x' })
    expect(toJsonSchema(Schema.intersect([Schema.object({ a: Schema.string() }), Schema.object({ b: Schema.number() })]))).to.deep.equal({
      allOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { type: 'object', properties: { b: { type: 'number' } } }],
    })
  })

  it('any, transform, lazy (recursive) and unrepresentable schemas never throw', () => {
    expect(toJsonSchema(Schema.any())).to.deep.equal({})
    expect(toJsonSchema(Schema.transform(Schema.string(), (s) => s.length))).to.deep.equal({ type: 'string' })
    const tree: Schema = Schema.lazy(() => Schema.object({ name: Schema.string(), children: Schema.array(tree) }))
    const converted = toJsonSchema(tree)
    assertPlainJson(converted, 'lazy')
    expect((converted.properties as any).name).to.deep.equal({ type: 'string' })
    expect(toJsonSchema(Schema.function())).to.deep.equal({})
    expect(toJsonSchema(Schema.is(Date))).to.deep.equal({})
    assertPlainJson(toJsonSchema(Schema.date()), 'date')
  })

  it('tool parameters are always an object schema', () => {
    expect(toolParameters(undefined)).to.deep.equal({ type: 'object', properties: {} })
    expect(toolParameters(Schema.object({}))).to.deep.equal({ type: 'object', properties: {} })
    expect(toolParameters(Schema.any())).to.deep.equal({ type: 'object', properties: {} })
    expect(toolParameters(Schema.string()).type).to.equal('object')
    expect(toolParameters(Schema.intersect([Schema.object({ a: Schema.string() })])).type).to.equal('object')
  })

  describe('over every tool the plugins register', () => {
    let host: TestHost
    before(async () => {
      host = await TestHost.boot({
        plugins: [[AdmissionPlugin], [WorkspacePlugin], [SupervisorPlugin, {}], [RepairPlugin, {}], [RecoveryPlugin, { checks: [] }]],
        waitFor: ['supervisor', 'workspace', 'repair', 'recovery', 'admission'],
      })
    })
    after(() => host?.dispose())

    it('converts each to a plain-JSON object schema whose required keys exist and whose defaults validate', () => {
      const tools = host.ctx.tools.list()
      expect(tools.map((t) => t.name)).to.include.members(['read', 'task_status', 'task_submit_plan', 'review_verdict', 'task_propose_repair', 'task_request_retry', 'write'])
      for (const tool of tools) {
        const parameters = toolParameters(tool.parameters)
        assertPlainJson(parameters, tool.name)
        expect(parameters.type, tool.name).to.equal('object')
        const properties = (parameters.properties ?? {}) as Record<string, JsonSchema>
        for (const key of (parameters.required ?? []) as string[]) expect(properties, `${tool.name}.${key}`).to.have.property(key)
        // Every described key of the schemastery object is offered to the model.
        if (tool.parameters?.type === 'object') expect(Object.keys(properties)).to.deep.equal(Object.keys(tool.parameters.dict ?? {}))
      }
      // A concrete one, checked whole: the reviewer's verdict.
      const verdict = toolParameters(host.ctx.tools.get('review_verdict')!.parameters)
      expect(verdict).to.deep.equal({
        type: 'object',
        properties: {
          verdict: { enum: ['pass', 'revise', 'needs-user'] },
          findings: { type: 'array', items: { type: 'string' } },
          evidenceSeqs: { type: 'array', items: { type: 'integer', minimum: 0 } },
        },
        required: ['verdict'],
      })
    })
  })
})
