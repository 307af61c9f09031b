import { PET_NAME_FORMAT } from './pets/pet-name.js'
import { createValidatorCompiler } from './validation/validator-compiler.js'

/** How the API validates requests: the app and `pets import` use the same compiler, formats included. */
export const apiValidatorCompiler = createValidatorCompiler({ 'pet-name': PET_NAME_FORMAT })
