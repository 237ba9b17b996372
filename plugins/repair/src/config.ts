import Schema from 'schemastery'

/** The repair plugin has no settings of its own; workspace limits belong to the workspace plugin. */
export interface Config {}

export const Config: Schema<Partial<Config>, Config> = Schema.object({}) as Schema<Partial<Config>, Config>
