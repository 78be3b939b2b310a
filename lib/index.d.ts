export * from '../binding'
