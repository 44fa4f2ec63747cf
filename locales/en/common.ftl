## Every page: the frame, the language switcher, error pages, units and times.
## Arguments: $n is a number already written the language's way, $count the same number for
## choosing the plural form.

skip-to-content = Skip to content
language-switcher = Language

## Error pages

error-title-not-found = Not found
error-title-slow-down = Slow down
error-title-forbidden = Not allowed
error-title-method = Method not allowed
error-title-busy = Busy
error-title-server = Something went wrong
error-title-other = That did not work
error-back-link = Back to the start page
error-back-rest = , where you can create a new URL.
err-no-page = There is no page at this address.
err-no-file = There is no such file.
err-method = This address accepts { $allow } only.
err-bin-not-found = This bin does not exist: it never did, it was deleted, or it has expired.
err-request-not-found = This bin has no such request (deleted or evicted).
err-too-many-bins = This address may create only so many bins a minute. Try again in { $seconds } s.
err-cross-site = Forms on this site can only be sent from its own pages.
err-bad-cursor = This page link is damaged (unknown cursor).
err-queue-full = The server is busy saving other requests. Try again in a moment.
err-storage-full = The server has no room left to store data. Try again later.
err-shutting-down = The server is shutting down. Try again in a few seconds.
err-internal = The server failed to complete the request; its log says why.
err-form-timeout = The form did not arrive in time. Please send it again.
err-form-too-large = The form is too large for this server.
# $detail is the server's own wording, in English.
err-other = The server refused this: { $detail }.

## Units and times

bytes = { $count ->
    [one] { $n } byte
   *[other] { $n } bytes
}
size-b = { $n } B
size-kib = { $n } KiB
size-mib = { $n } MiB
size-gib = { $n } GiB
size-tib = { $n } TiB
# A span of time, as it follows "in …" or "after …".
duration-seconds = { $count ->
    [one] { $n } second
   *[other] { $n } seconds
}
duration-minutes = { $count ->
    [one] { $n } minute
   *[other] { $n } minutes
}
duration-hours = { $count ->
    [one] { $n } hour
   *[other] { $n } hours
}
duration-days = { $count ->
    [one] { $n } day
   *[other] { $n } days
}
time-now = now
time-in = in { $duration }

## Strings of the page's script (static/app.js), sent as JSON. A message that selects on
## $category gives its plural forms; {$n} is where the script puts the number.

js-copied = Copied
js-copy-failed = Copy failed
js-copied-announce = Copied to the clipboard
js-copy-failed-announce = Could not copy: select the text and copy it by hand
js-could-not-copy = Could not copy
js-no-curl = No curl command for this request
js-copied-curl = Copied the request as curl
js-pick-request = Pick a request
js-pick-request-hint = Select a request in the list to see it here.
js-bin-deleted = This bin was deleted
js-new-request = New { $method } request
js-jump-new = { $category ->
    [one] ↑ { $n } new request
   *[other] ↑ { $n } new requests
}
js-newer = { $category ->
    [one] { $n } new request: show the newest
   *[other] { $n } new requests: show the newest
}
js-hidden = { $category ->
    [one] { $n } new request did not match.
   *[other] { $n } new requests did not match.
}
js-bytes = { $category ->
    [one] { $n } byte
   *[other] { $n } bytes
}
js-size-b = { $n } B
js-size-kib = { $n } KiB
js-size-mib = { $n } MiB
js-size-gib = { $n } GiB
js-size-tib = { $n } TiB
js-new-requests = ↑ New requests
js-live = live
js-connecting = connecting
js-paused = paused
js-reconnecting = reconnecting
js-offline = offline: reload
js-live-deleted = bin deleted
js-copy = Copy
js-copy-failed-short = Failed
js-copy-value = Copy this value
js-copied-header = Copied the header value
js-copy-failed-download = Could not copy: download it instead
js-copy-failed-script = Could not copy: download the script instead
js-fetch-failed-script = Could not fetch the command: download the script instead
js-checked = Checked
# $when is a relative time from the browser ("5 min. ago").
js-recent-opened = opened { $when }
js-shortcuts = Keyboard shortcuts
js-close = Close
js-key-next = next request
js-key-previous = previous request
js-key-curl = copy the request as curl
js-key-search = search
js-key-follow = follow newest on or off
js-key-help = this list
js-key-close = close
js-following = Following the newest request
js-not-following = Not following
