/**
 * Application settings (docs/api-v3.md#application-settings, administrators only): every field of
 * the settings table, with real servers' model validations answered as per-field 400s.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { SettingsRec } from '../db.ts';
import { FieldErrors, isHttpUrl } from '../field-errors.ts';
import { adminRoute } from '../route.ts';

export function settingsView(s: SettingsRec) {
  return {
    id: s.id,
    default_projects_limit: s.default_projects_limit,
    signup_enabled: s.signup_enabled,
    signin_enabled: s.signin_enabled,
    avatar_service_enabled: s.avatar_service_enabled,
    sign_in_text: s.sign_in_text,
    created_at: s.created_at,
    updated_at: s.updated_at,
    home_page_url: s.home_page_url,
    default_branch_protection: s.default_branch_protection,
    restricted_visibility_levels: s.restricted_visibility_levels,
    max_attachment_size: s.max_attachment_size,
    session_expire_delay: s.session_expire_delay,
    default_project_visibility: s.default_project_visibility,
    default_snippet_visibility: s.default_snippet_visibility,
    restricted_signup_domains: s.restricted_signup_domains,
    user_oauth_applications: s.user_oauth_applications,
    after_sign_out_path: s.after_sign_out_path,
  };
}

/** Settings visibility codes (docs/api-v3.md#settings-object: 0 private, 1 internal, 2 public; projects use 0/10/20). */
const VISIBILITY_CODES = [0, 1, 2];

type Changes = Partial<Omit<SettingsRec, 'id' | 'created_at' | 'updated_at'>>;

const present = (value: unknown) => value !== undefined;

function readInt(
  p: Record<string, unknown>,
  name: keyof Changes,
  errors: FieldErrors,
  rule: { min: number; strict?: boolean; allowed?: number[] },
): number | undefined {
  const value = p[name];
  if (!present(value)) return undefined;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n)) {
    errors.add(name, 'is not a number');
    return undefined;
  }
  if (rule.allowed && !rule.allowed.includes(n)) errors.add(name, 'is not included in the list');
  else if (rule.strict && n <= rule.min) errors.add(name, `must be greater than ${rule.min}`);
  else if (!rule.strict && n < rule.min) errors.add(name, `must be greater than or equal to ${rule.min}`);
  return n;
}

function readBool(p: Record<string, unknown>, name: keyof Changes, errors: FieldErrors): boolean | undefined {
  const value = p[name];
  if (!present(value) || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  const text = String(value).toLowerCase();
  if (['true', '1', 't', 'yes', 'on'].includes(text)) return true;
  if (['false', '0', 'f', 'no', 'off'].includes(text)) return false;
  errors.add(name, 'is not included in the list');
  return undefined;
}

/** `null` or an empty string clears a nullable text. */
function readText(p: Record<string, unknown>, name: keyof Changes): string | null | undefined {
  const value = p[name];
  if (!present(value)) return undefined;
  if (value === null) return null;
  return String(value);
}

/** An array (JSON, or `name[]=` form fields) or a comma/space separated string; null or '' clears. */
function readList(p: Record<string, unknown>, name: keyof Changes): string[] | null | undefined {
  const value = p[name];
  if (!present(value)) return undefined;
  if (value === null || value === '') return null;
  const items = Array.isArray(value) ? value.map(String) : String(value).split(/[\s,]+/);
  return items.map((s) => s.trim()).filter((s) => s.length > 0);
}

function readChanges(p: Record<string, unknown>, errors: FieldErrors): Changes {
  const changes: Changes = {};
  const set = <K extends keyof Changes>(key: K, value: Changes[K] | undefined) => {
    if (value !== undefined) changes[key] = value;
  };
  set('default_projects_limit', readInt(p, 'default_projects_limit', errors, { min: 0 }));
  set('max_attachment_size', readInt(p, 'max_attachment_size', errors, { min: 0, strict: true }));
  set('session_expire_delay', readInt(p, 'session_expire_delay', errors, { min: 0 }));
  set(
    'default_branch_protection',
    readInt(p, 'default_branch_protection', errors, { min: 0, allowed: [0, 1, 2] }),
  );
  set(
    'default_project_visibility',
    readInt(p, 'default_project_visibility', errors, { min: 0, allowed: VISIBILITY_CODES }),
  );
  set(
    'default_snippet_visibility',
    readInt(p, 'default_snippet_visibility', errors, { min: 0, allowed: VISIBILITY_CODES }),
  );
  for (const key of [
    'signup_enabled',
    'signin_enabled',
    'avatar_service_enabled',
    'user_oauth_applications',
  ] as const)
    set(key, readBool(p, key, errors));
  set('sign_in_text', readText(p, 'sign_in_text'));
  for (const key of ['home_page_url', 'after_sign_out_path'] as const) {
    const url = readText(p, key);
    // Real servers validate these as URLs when not blank.
    if (url && !isHttpUrl(url)) errors.add(key, 'must be a valid URL');
    set(key, url);
  }
  const levels = readList(p, 'restricted_visibility_levels');
  if (levels) {
    // The real servers' message for a level outside the settings codes.
    for (const level of levels)
      if (!VISIBILITY_CODES.map(String).includes(level))
        errors.add('restricted_visibility_levels', `'${level}' is not a valid visibility level`);
    set(
      'restricted_visibility_levels',
      levels.map((l) => Number(l)),
    );
  } else set('restricted_visibility_levels', levels);
  set('restricted_signup_domains', readList(p, 'restricted_signup_domains'));
  return changes;
}

export function registerSettingsRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  router.get(
    '/application/settings',
    adminRoute(({ res }) => {
      res.json(settingsView(db.data.settings));
    }),
  );

  router.put(
    '/application/settings',
    adminRoute(({ res, p }) => {
      const errors = new FieldErrors();
      const changes = readChanges(p, errors);
      errors.throwIfAny();
      Object.assign(db.data.settings, changes, { updated_at: db.now() });
      db.changed();
      res.json(settingsView(db.data.settings));
    }),
  );
}
