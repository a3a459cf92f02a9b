/**
 * Images in an answer load only when the person asks.
 *
 * JupyterLab's sanitizer keeps `<img src="https://...">`, so a model's answer (or a
 * web page it quotes) could make the person's browser ask any host for a picture,
 * outside the kernel's network guard. `holdingImages` wraps the sanitizer: after it
 * has run, the clean HTML is read into an inert document (DOMParser: nothing in it
 * loads or runs), forms and their controls become their text, and every image,
 * picture, video and audio becomes a quiet line "[image: alt · from host · show]"; `showOnClick` gives each "show" its
 * click, and remembers what was shown so a redraw keeps it.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

/** The class of a held image's line (the kernel's HTML fallback uses `ak-held-image`). */
export const HELD_CLASS = 'akl-held-image';
const LOADING = 'img, picture, video, audio, source, track, input[type="image" i], object, embed';
// Kept by JupyterLab's sanitizer, never needed in an answer, and a page could dress them
// up as ours: forms and their controls become their text.
const CONTROLS = 'form, button, input, select, textarea, option, optgroup, fieldset, label';

/** An absolute http(s) URL, or null. */
export function webUrl(value: string | null | undefined): string | null {
  if (!value) {
    return null;
  }
  try {
    const url = new URL(value.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

function heldLine(doc: Document, media: Element): HTMLElement {
  const alt = (media.getAttribute('alt') || media.getAttribute('title') || '').trim();
  const url = webUrl(media.getAttribute('src'));
  const line = doc.createElement('span');
  line.className = HELD_CLASS;
  const words = alt ? `image: ${alt}` : media.localName === 'img' ? 'image' : media.localName;
  if (!url) {
    line.textContent = `[${words}, not shown]`;
    return line;
  }
  line.appendChild(doc.createTextNode(`[${words} · from ${new URL(url).host} · `));
  const show = doc.createElement('button');
  show.type = 'button';
  show.className = 'akl-show-image';
  show.dataset.src = url;
  show.dataset.alt = alt;
  show.dataset.kind = media.localName === 'video' || media.localName === 'audio' ? media.localName : 'img';
  show.textContent = 'show';
  line.appendChild(show);
  line.appendChild(doc.createTextNode(']'));
  return line;
}

/** Clean HTML with every loading element replaced by its held line. */
export function holdImages(clean: string): string {
  const doc = new DOMParser().parseFromString(`<body>${clean}</body>`, 'text/html');
  for (const control of Array.from(doc.body.querySelectorAll(CONTROLS)).reverse()) {
    const value = control.localName === 'input' ? (control as HTMLInputElement).value : '';
    control.replaceWith(...Array.from(control.childNodes), value);
  }
  for (const media of Array.from(doc.body.querySelectorAll(LOADING))) {
    if (media.isConnected) {
      media.replaceWith(heldLine(doc, media));
    }
  }
  for (const styled of Array.from(doc.body.querySelectorAll('[style], [background], [srcset]'))) {
    const style = styled.getAttribute('style') || '';
    if (/url\s*\(|image-set|expression/i.test(style)) {
      styled.removeAttribute('style');
    }
    styled.removeAttribute('background');
    styled.removeAttribute('srcset');
  }
  return doc.body.innerHTML;
}

/** The running JupyterLab's sanitizer, then images held. */
export function holdingImages(sanitizer: IRenderMime.ISanitizer): IRenderMime.ISanitizer {
  return {
    sanitize: (dirty: string, options?: IRenderMime.ISanitizerOptions) =>
      holdImages(sanitizer.sanitize(dirty, options)),
    getAutolink: () => sanitizer.getAutolink?.() ?? true,
    allowNamedProperties: sanitizer.allowNamedProperties
  };
}

/** Each "show" button under `host` loads its image when clicked; `shown` keeps them shown. */
export function showOnClick(host: HTMLElement, shown: Set<string>): void {
  for (const button of Array.from(host.querySelectorAll<HTMLButtonElement>('button.akl-show-image'))) {
    const url = webUrl(button.dataset.src);
    const line = button.closest(`.${HELD_CLASS}`);
    if (!url || !line) {
      continue;
    }
    const reveal = () => {
      shown.add(url);
      const kind = button.dataset.kind;
      if (kind === 'video' || kind === 'audio') {
        const media = document.createElement(kind);
        media.controls = true;
        media.preload = 'metadata';
        media.src = url;
        line.replaceWith(media);
        return;
      }
      const img = document.createElement('img');
      img.alt = button.dataset.alt ?? '';
      img.referrerPolicy = 'no-referrer';
      img.src = url;
      line.replaceWith(img);
    };
    if (shown.has(url)) {
      reveal();
    } else {
      button.addEventListener('click', reveal);
    }
  }
}
