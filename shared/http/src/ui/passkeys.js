// Passkeys (issue 41): add one on the Devices page, log in with one, and confirm an answer with
// one where a policy asks. The server puts the WebAuthn options and a sealed ceremony state in
// the page; this script asks the browser (navigator.credentials) and posts the result in the
// page's own form. Without JavaScript or WebAuthn, the pages say so and nothing else changes.
'use strict';
(function () {
  const supported = window.PublicKeyCredential && window.isSecureContext && navigator.credentials;

  const bytes = (b64) => {
    const pad = '='.repeat((4 - (b64.length % 4)) % 4);
    return Uint8Array.from(atob((b64 + pad).replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  };
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  // WebAuthn Level 3 parses JSON options itself; older browsers get the byte fields converted here
  const creation = (o) => PublicKeyCredential.parseCreationOptionsFromJSON
    ? PublicKeyCredential.parseCreationOptionsFromJSON(o)
    : { ...o, challenge: bytes(o.challenge), user: { ...o.user, id: bytes(o.user.id) },
        excludeCredentials: (o.excludeCredentials || []).map((c) => ({ ...c, id: bytes(c.id) })) };
  const request = (o) => PublicKeyCredential.parseRequestOptionsFromJSON
    ? PublicKeyCredential.parseRequestOptionsFromJSON(o)
    : { ...o, challenge: bytes(o.challenge), allowCredentials: (o.allowCredentials || []).map((c) => ({ ...c, id: bytes(c.id) })) };
  const json = (cred) => {
    if (typeof cred.toJSON === 'function') return JSON.stringify(cred.toJSON());
    const r = cred.response;
    const out = { id: cred.id, rawId: b64(cred.rawId), type: cred.type, authenticatorAttachment: cred.authenticatorAttachment,
      clientExtensionResults: cred.getClientExtensionResults(), response: { clientDataJSON: b64(r.clientDataJSON) } };
    if (r.attestationObject) {
      out.response.attestationObject = b64(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = b64(r.authenticatorData);
      out.response.signature = b64(r.signature);
      if (r.userHandle) out.response.userHandle = b64(r.userHandle);
    }
    return JSON.stringify(out);
  };
  const say = (el, text) => { if (el) { el.textContent = text; el.hidden = false; } };
  const why = (e) => (e && e.name === 'NotAllowedError')
    ? `The passkey prompt was closed or timed out. Try again. (${e.message})`
    : `The browser could not use a passkey: ${e && e.message ? e.message : e}`;

  // Devices page and login page: a form whose button runs the ceremony, then posts.
  // A passkey belongs to the Hub's domain (its RP id): opened under another name (an address
  // such as 127.0.0.1), the page says where passkeys work instead of offering a prompt that fails.
  const elsewhere = (rp) => {
    const host = location.hostname;
    if (!rp || host === rp || host.endsWith(`.${rp}`)) return null;
    return `${location.protocol}//${rp}${location.port ? `:${location.port}` : ''}${location.pathname}`;
  };
  document.querySelectorAll('form[data-passkey]').forEach((form) => {
    const button = form.querySelector('[data-passkey-go]');
    const status = form.querySelector('[data-passkey-status]');
    if (!button) return;
    const there = elsewhere(form.dataset.rp);
    if (there) {
      if (form.dataset.passkeyKind === 'create') say(status, `Passkeys work when the inbox is opened at ${there}`);
      return;
    }
    if (!supported) {
      say(status, 'This browser cannot use passkeys here.');
      button.disabled = true;
      return;
    }
    button.hidden = false;
    button.addEventListener('click', async (ev) => {
      ev.preventDefault();
      button.disabled = true;
      try {
        const options = JSON.parse(form.dataset.passkey);
        const cred = form.dataset.passkeyKind === 'create'
          ? await navigator.credentials.create({ publicKey: creation(options) })
          : await navigator.credentials.get({ publicKey: request(options) });
        form.querySelector('input[name=response]').value = json(cred);
        form.submit();
      } catch (e) {
        say(status, why(e));
        button.disabled = false;
      }
    });
  });

  // An answer a policy gates: every submit but a decline is confirmed with a passkey first.
  document.querySelectorAll('form[data-step-up]').forEach((form) => {
    const status = form.querySelector('[data-passkey-status]');
    form.addEventListener('submit', async (ev) => {
      const submitter = ev.submitter;
      const field = form.querySelector('input[name=passkey_response]');
      if (!field || field.value || (submitter && submitter.value === 'declined')) return;
      ev.preventDefault();
      const there = elsewhere(form.dataset.rp);
      if (there) { say(status, `This answer needs a passkey, which works when the inbox is opened at ${there}`); return; }
      if (!supported) { say(status, 'This answer needs a passkey, and this browser cannot use one here.'); return; }
      try {
        const cred = await navigator.credentials.get({ publicKey: request(JSON.parse(form.dataset.stepUp)) });
        field.value = json(cred);
        form.requestSubmit(submitter || undefined);
      } catch (e) {
        say(status, why(e));
      }
    });
  });
})();
