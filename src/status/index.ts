/** The status page, seen from outside: the page and its JSON, and its basic authentication. */
export { basicAuth } from './basic-auth.ts';
export { createDeliveryLog, createStatusRouter } from './status-page.ts';
