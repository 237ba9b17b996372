/*
 * How each OpenAI-compatible server refuses, or cuts, a prompt longer than its context, and how it tells
 * its context size — as those servers answer, for the loopback endpoint to answer alike.
 */

export type MockDialect = 'openai' | 'deepseek' | 'vllm' | 'vllm-nested' | 'llamacpp' | 'ollama'

/** The status and body a dialect answers a request of `requested` tokens with, over a context of `limit`. */
export function contextRefusalBody(dialect: Exclude<MockDialect, 'ollama'>, limit: number, requested: number, completion = 0): { status: number, body: unknown } {
  switch (dialect) {
    case 'openai':
      return { status: 400, body: { error: {
        message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${requested} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded',
      } } }
    case 'deepseek':
      return { status: 400, body: { error: {
        message: `This model's maximum context length is ${limit} tokens. However, you requested ${requested + completion} tokens (${requested} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
        type: 'invalid_request_error', param: null, code: 'invalid_request_error',
      } } }
    case 'vllm':
      // Flat, as vLLM's OpenAI server answers: the SDK finds no `error` key and says "(no body)".
      return { status: 400, body: {
        object: 'error', message: `This model's maximum context length is ${limit} tokens. However, you requested ${requested + completion} tokens (${requested} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
        type: 'BadRequestError', param: null, code: 400,
      } }
    case 'vllm-nested':
      return { status: 400, body: { error: {
        message: `The prompt (length ${requested}) is longer than the maximum model length of ${limit}. Make sure that \`max_model_len\` is no smaller than the number of text tokens.`,
        type: 'BadRequestError', param: null, code: 400,
      } } }
    case 'llamacpp':
      return { status: 400, body: { error: {
        code: 400, message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error',
        n_prompt_tokens: requested, n_ctx: limit,
      } } }
  }
}

/** vLLM's `GET /v1/models`. */
export const vllmModels = (model: string, maxModelLen: number) => ({
  object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'vllm', root: model, parent: null, max_model_len: maxModelLen, permission: [] }],
})

/** Ollama's `POST /api/show` (`numCtx` undefined: the model sets none). */
export const ollamaShow = (numCtx: number | undefined, trained = 131072) => ({
  modelfile: '# Modelfile', parameters: numCtx ? `stop "<|im_end|>"\nnum_ctx ${numCtx}` : 'stop "<|im_end|>"', template: '{{ .Prompt }}',
  details: { family: 'qwen2', parameter_size: '7.6B' }, model_info: { 'general.architecture': 'qwen2', 'qwen2.context_length': trained },
})
