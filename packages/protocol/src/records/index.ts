export * from './reader'
export * from './record-index'
export * from './admission'
export * from './read-record'
