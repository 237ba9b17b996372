export * from './host'
export * from './http'
export * from './ports'
export * from './workspace'
