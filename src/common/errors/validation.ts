import { ValidationError } from 'class-validator';
import { ApiException, FieldError } from './api.exception';

/** Flattens class-validator errors into `[{field, message}]` with dotted paths. */
export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) out.push({ field, message });
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

export function validationException(errors: ValidationError[]): ApiException {
  const fieldErrors = flattenValidationErrors(errors);
  const summary = fieldErrors.map((e) => e.message).join('; ');
  return ApiException.invalid(summary ? `Invalid argument: ${summary}` : 'Invalid argument', fieldErrors);
}
