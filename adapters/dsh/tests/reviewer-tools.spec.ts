import { expect } from 'chai'
import { isTaskwardReviewer, presetReadOnlyTools, restrictReviewerTools } from '../src/reviewer-tools'

/*
 * A reviewer agent in DSH inherits its preset's whole tool set (write, edit, bash…): it is held to DSH's
 * read-only read/glob/grep as the preset registered them. A stand-in of rc.8's registry layers
 * (packages/core/tools: a global layer, scoped layers keyed by `{agentPreset}` or by an agent).
 */
describe('DSH adapter: a reviewer\'s tools', () => {
  const def = (name: string) => ({ name })
  function registry(preset: Record<string, object>, global: Record<string, object> = {}, agentScope: Record<string, object> = {}) {
    const layer = (entries: Record<string, object>) => ({ tools: { entries: () => Object.entries(entries) } })
    const agent: any = { id: 'reviewer-1' }
    const restrictions: unknown[] = []
    const modes: string[] = []
    const tools: any = {
      layers: { global: layer(global), scoped: new Map<unknown, unknown>([[{ agentPreset: 'taskward' }, layer(preset)], [agent, layer(agentScope)]]) },
      get: (name: string) => agentScope[name] ?? preset[name] ?? global[name],
    }
    agent.ctx = { tools: { restrict: (filter: unknown) => { restrictions.push(filter); return () => {} }, presentAs: (mode: string) => { modes.push(mode); return () => {} } } }
    return { tools, agent, restrictions, modes }
  }

  it('allows only the preset\'s read, glob and grep, and presents natively (no run_code)', () => {
    const preset = { read: def('read'), glob: def('glob'), grep: def('grep'), write: def('write'), edit: def('edit'), bash: def('bash') }
    const { tools, agent, restrictions, modes } = registry(preset)
    expect(restrictReviewerTools(tools, agent)).to.deep.equal(['read', 'glob', 'grep'])
    expect(restrictions).to.deep.equal([{ allow: ['read', 'glob', 'grep'] }])
    expect(modes).to.deep.equal(['native'])
  })

  it('never allows a read-named tool that is not the preset\'s (another plugin\'s, global or in the agent\'s scope)', () => {
    const preset = { glob: def('glob'), write: def('write') }
    const { tools, agent, restrictions } = registry(preset, { read: def('read') }, { grep: def('grep') })
    expect(presetReadOnlyTools(tools, agent)).to.deep.equal(['glob'])
    restrictReviewerTools(tools, agent)
    expect(restrictions).to.deep.equal([{ allow: ['glob'] }])
  })

  it('hides every inherited tool when the preset has none of them, and refuses a DSH that cannot restrict', () => {
    const { tools, agent, restrictions } = registry({ write: def('write'), bash: def('bash') })
    restrictReviewerTools(tools, agent)
    expect(restrictions).to.deep.equal([{ allow: [] }])
    delete agent.ctx.tools.restrict
    expect(() => restrictReviewerTools(tools, agent)).to.throw(/cannot restrict/)
  })

  it('tells a Taskward reviewer\'s log (a review prompt naming its job) from another session with a parent', () => {
    const message = (source: unknown) => ({ type: 'user/message', seq: 1, time: 0, data: { id: 'm', role: 'user', content: [], source } })
    expect(isTaskwardReviewer({ events: [message({ kind: 'plugin', plugin: 'taskward', origin: 'controller', jobId: 'j1' })] })).to.equal(true)
    // A main session's controller follow-ups name no job; a user's own message, or another plugin's, is no review prompt.
    expect(isTaskwardReviewer({ events: [message({ kind: 'plugin', plugin: 'taskward', origin: 'controller' })] })).to.equal(false)
    expect(isTaskwardReviewer({ events: [message({ kind: 'user' }), message({ kind: 'plugin', plugin: 'other', jobId: 'j1' })] })).to.equal(false)
  })
})
