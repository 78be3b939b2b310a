'use strict'

// The package's classes over the binding's: a JS class's promises, with coded errors. A call without `new` throws and
// changes nothing, a method called on anything but an instance throws, and every method also works taken off its
// instance.

const { codedError } = require('./codes.js')

function describe(value) {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'object') return 'an object that is not one'
  return `a ${typeof value}`
}

// A class's brand: a private field that holds an instance's native core, the object its methods run on. `stamp` adds
// it to an instance made elsewhere (a base constructor may return any object, and a derived class's fields are added
// to that object), `has` checks for it (a Proxy or a look-alike has none), `core` reads it.
function brand() {
  class Base {
    constructor(self) {
      // biome-ignore lint/correctness/noConstructorReturn: the base returns the instance made elsewhere, so that a derived class adds its private field to it
      return self
    }
  }
  class Branded extends Base {
    #core
    constructor(self, core) {
      super(self)
      this.#core = core
    }
    static has(value) {
      return typeof value === 'object' && value !== null && #core in value
    }
    static core(value) {
      return value.#core
    }
  }
  return { stamp: (self, core) => new Branded(self, core), has: Branded.has, core: Branded.core }
}

/**
 * A class named `name`. Its constructor throws a coded TypeError without `new`, makes its instance a plain object of
 * its own prototype, and gives it its native core (`makeCore(options)`) in a private field; `made`, when given, is
 * called with each new core and its instance, and `used`, when given, with an instance at its first method access (and
 * at every access that finds no own methods on it). Its methods, named `names`, are the core's functions:
 * `methodsOf(core)` makes them, once per core, and instances that share a core share them.
 *
 * An instance's methods are its own functions (so they work taken off it), given on its first method access rather
 * than by the constructor, so that an instance costs little to make and to keep: each method name is a getter on the
 * prototype that, reached through an instance, gives the instance all of them as own, hidden, read-only properties,
 * which shadow the getters from then on. Reached otherwise, it gives a function that throws a coded TypeError unless
 * it is called on an instance. Returns the class, `coreOf(instance)`, `is(value)` (whether `value` is an instance)
 * and `methodsOf(instance)` (its methods as `methodsOf` made them).
 */
function brandedClass(name, names, makeCore, methodsOf, made, used) {
  const { stamp, has, core } = brand()
  const proto = {}
  const tables = new WeakMap()
  function methods(c) {
    let table = tables.get(c)
    if (table === undefined) {
      table = methodsOf(c)
      tables.set(c, table)
    }
    return table
  }
  const own = value => ({ value, writable: false, enumerable: false, configurable: false })
  function materialize(self, key) {
    if (used) used(self)
    const table = methods(core(self))
    // A frozen or sealed instance, which can take no property, gets the one asked for each time instead.
    if (!Object.isExtensible(self)) return table[key]
    for (const k of names) Object.defineProperty(self, k, own(table[k]))
    return table[key]
  }
  for (const key of [...names].sort()) {
    const guarded = {
      [key](...args) {
        if (!has(this)) {
          throw codedError(
            TypeError,
            'ERR_SNOWID_INVALID_ARGUMENT',
            `${name}.prototype.${key}: expected to be called on a ${name}, found ${describe(this)}`,
          )
        }
        if (used) used(this)
        return Reflect.apply(methods(core(this))[key], this, args)
      },
    }[key]
    Object.defineProperty(proto, key, {
      get() {
        return has(this) ? materialize(this, key) : guarded
      },
      // Assigning a method on an instance or a subclass's prototype shadows it, as for a plain method.
      set(value) {
        if (this === proto) {
          throw codedError(
            TypeError,
            'ERR_SNOWID_INVALID_ARGUMENT',
            `${name}.prototype.${key}: expected to stay as it is, found an assignment`,
          )
        }
        Object.defineProperty(this, key, { value, writable: true, enumerable: true, configurable: true })
      },
      enumerable: true,
      configurable: true,
    })
  }
  // A `function`, not a method, so that it can be called with `new`; the computed key names it. Called with `new`,
  // its `this` is a new object of `new.target`'s prototype, a subclass's included.
  const Class = {
    [name]: function (options) {
      if (new.target === undefined) {
        throw codedError(
          TypeError,
          'ERR_SNOWID_INVALID_ARGUMENT',
          `${name}: expected a call with new (new ${name}(options)), found a call without new`,
        )
      }
      const c = makeCore(options)
      stamp(this, c)
      if (made) made(c, this)
    },
  }[name]
  Object.defineProperty(Class, 'prototype', { value: proto, writable: false })
  Object.defineProperty(proto, 'constructor', { value: Class, writable: true, enumerable: false, configurable: true })
  return { Class, coreOf: core, is: has, methodsOf: instance => methods(core(instance)) }
}

module.exports = { brandedClass }
