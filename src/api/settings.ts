/** Application settings (docs/api-v3.md#application-settings, administrators only): read and change. */
import type { Http } from './http.ts';
import type { CallOptions, Timestamp } from './types.ts';

/**
 * Visibility codes here are 0 private, 1 internal, 2 public: not the 0/10/20 of projects
 * (docs/api-v3.md#application-settings says so). Field names follow docs/api-v3.md#application-settings, including the neutral `avatar_service_enabled`.
 */
export type SettingsVisibility = 0 | 1 | 2;

export interface ApplicationSettings {
  id: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Project limit per user; default 10. */
  default_projects_limit: number;
  signup_enabled: boolean;
  /** Login with a local account. */
  signin_enabled: boolean;
  /** The external avatar service. */
  avatar_service_enabled: boolean;
  sign_in_text: string | null;
  /** Where a visitor who is not logged in is sent. */
  home_page_url: string | null;
  /** 0 not protected, 1 partially (developers push, no force push or delete), 2 fully; default 1. */
  default_branch_protection: 0 | 1 | 2;
  /** Levels non-admins may not use; `null` means no restriction. */
  restricted_visibility_levels: SettingsVisibility[] | null;
  /** In MB. */
  max_attachment_size: number;
  /** In minutes; the server applies a change only after a restart. */
  session_expire_delay: number;
  default_project_visibility: SettingsVisibility;
  default_snippet_visibility: SettingsVisibility;
  /** E-mail domains sign-up is limited to; `null` means any. */
  restricted_signup_domains: string[] | null;
  user_oauth_applications: boolean;
  after_sign_out_path: string | null;
}

/** Any field but the read-only ones; all optional. */
export type SettingsEdit = Partial<Omit<ApplicationSettings, 'id' | 'created_at' | 'updated_at'>>;

export function createSettingsApi(http: Http) {
  return {
    get(options: CallOptions = {}): Promise<ApplicationSettings> {
      return http.request({ method: 'GET', route: '/application/settings', ...options });
    },

    /** Answers the whole settings object after the change. */
    update(edit: SettingsEdit, options: CallOptions = {}): Promise<ApplicationSettings> {
      return http.request({ method: 'PUT', route: '/application/settings', body: { ...edit }, ...options });
    },
  };
}
