export * from './reader'
