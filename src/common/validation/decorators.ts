import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsDefined,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  registerDecorator,
  ValidateIf,
  ValidationArguments,
} from 'class-validator';

/** Whether a field may be absent, and whether `null` (meaning "clear it") is allowed. */
export interface Presence {
  required?: boolean;
  nullable?: boolean;
}

const trim = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** "true"/"1" and "false"/"0" (query strings, form fields) become booleans; anything else is left to the validators. */
export const booleanText = Transform(({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  return value;
});

/** Numeric text ("19.99") becomes a number; anything else is left for the validators to refuse. */
const numericText = Transform(({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : value,
);

function presence({ required, nullable }: Presence, property: string): PropertyDecorator[] {
  if (required) return [IsDefined({ message: `${property} is required` })];
  // Absent always skips; null skips only for nullable fields (null then clears the stored value).
  return nullable ? [IsOptional()] : [ValidateIf((o: Record<string, unknown>) => o[property] !== undefined)];
}

function docs(p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return ApiProperty({ ...options, required: !!p.required, nullable: !!p.nullable } as ApiPropertyOptions);
}

/** A trimmed, non-blank string of at most `max` characters. */
export function TextField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    trim,
    ...presence(p, property),
    IsString({ message: `${property} must be a string` }),
    MinLength(1, { message: `${property} must not be empty` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    docs(p, { type: String, maxLength: max, ...options } as ApiPropertyOptions),
  );
}

/** A free text that may be long and is kept as sent (no trimming). */
export function LongTextField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    ...presence(p, property),
    IsString({ message: `${property} must be a string` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    docs(p, { type: String, maxLength: max, ...options } as ApiPropertyOptions),
  );
}

export function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}

/** An absolute http(s) URL of at most `max` characters. */
export function HttpUrlField(property: string, max: number, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  const isHttp: PropertyDecorator = (target, key) =>
    registerDecorator({
      name: 'isHttpUrl',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => isHttpUrl(value),
        defaultMessage: (args?: ValidationArguments) =>
          `${args?.property ?? property} must be an absolute http or https URL`,
      },
    });
  return applyDecorators(
    trim,
    ...presence(p, property),
    IsString({ message: `${property} must be a string` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    isHttp,
    docs(p, { type: String, maxLength: max, format: 'uri', ...options } as ApiPropertyOptions),
  );
}

/** A decimal number in [min, max] (numeric text accepted). */
export function DecimalField(
  property: string,
  min: number,
  max: number,
  p: Presence,
  options: ApiPropertyOptions,
): PropertyDecorator {
  return applyDecorators(
    numericText,
    ...presence(p, property),
    IsNumber({ allowNaN: false, allowInfinity: false }, { message: `${property} must be a number` }),
    Min(min, { message: `${property} must be at least ${min}` }),
    Max(max, { message: `${property} must be at most ${max}` }),
    docs(p, { type: Number, minimum: min, maximum: max, ...options } as ApiPropertyOptions),
  );
}

/** A positive int64 id (numeric text accepted). */
export function IdField(property: string, p: Presence, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    numericText,
    ...presence(p, property),
    IsInt({ message: `${property} must be an integer` }),
    Min(1, { message: `${property} must be a positive integer` }),
    Max(Number.MAX_SAFE_INTEGER, { message: `${property} is too large` }),
    docs(p, { type: Number, format: 'int64', ...options } as ApiPropertyOptions),
  );
}

/** An optional integer query parameter (its default is applied by the handler's DTO). */
export function IntQuery(property: string, min: number, max: number, options: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    numericText,
    IsOptional(),
    IsInt({ message: `${property} must be an integer` }),
    Min(min, { message: `${property} must be at least ${min}` }),
    Max(max, { message: `${property} must be at most ${max}` }),
    ApiProperty({ type: Number, format: 'int32', minimum: min, maximum: max, required: false, ...options } as ApiPropertyOptions),
  );
}
