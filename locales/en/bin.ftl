## The bin page (/bins/{bin}).

bin-title = Bin { $bin } · hookbin
copy = Copy
bin-your-url = Your URL
# Before a time: "Expires in 6 days", "Expires now".
bin-expires = Expires
# After the count of requests kept: "37 / 1,000 requests".
bin-cap = { $count ->
    [one] / { $n } request
   *[other] / { $n } requests
}
bin-requests = Requests
bin-clear-confirm = Delete every request in this bin?
bin-clear = Clear all
bin-search-label = Search requests
bin-search-help = Terms: method:, path:, header:NAME, header:NAME=TEXT, body:, a bare word or "quoted text"; -term excludes
bin-search = Search
bin-search-clear = Clear
# $error is the search parser's explanation, in English.
bin-search-error = Cannot search: { $error }
bin-filter-note = Only requests that match this search are shown, new arrivals too:
bin-newest = ← Newest requests
bin-newer = New requests arrived: show the newest
bin-no-match = No request matches this search.
bin-no-match-page = No request on this page matches this search.
bin-no-match-stopped = The search stopped early: look further with “Older requests”.
bin-waiting = Waiting for the first request…
bin-older = Older requests →
bin-row-truncated = (truncated)
bin-selected = Selected request
bin-all-requests = ← All requests
bin-gone-title = That request is gone
bin-gone = It was deleted, or evicted to make room for newer ones.
bin-fix-title = Fix the search
bin-fix = The search box above says what is wrong with it.
bin-nomatch-title = No match
bin-nomatch = No request matches this search yet. New ones that match appear here at once.
bin-waiting-hint = Send anything to your URL and it shows up here at once, no reload needed.
bin-pick-title = Pick a request
bin-pick = Select a request in the list to see it here.
bin-or-paste = Or paste your URL into the provider's webhook settings:
bin-settings = Bin settings
bin-response = Response
# $error says which field is wrong, in English.
bin-not-saved = Not saved: { $error }
bin-status = Status
bin-delay = Delay (ms)
bin-headers = Headers
bin-headers-hint = one per line,
bin-body = Body
bin-save = Save response
bin-reset = Reset to the default 200 ok
bin-delete-confirm = Delete this bin and all its requests? The URL stops working.
bin-delete = Delete this bin
bin-delete-hint = The URL stops working and every request is deleted.
bin-answers-default = Answers 200 with the body "ok" (the default).
# The summary of a custom response, joined with commas: "Answers 429, 2 headers, a 9 B body, after 300 ms."
bin-answers = Answers { $status }
bin-answers-headers = { $count ->
    [one] { $n } header
   *[other] { $n } headers
}
bin-answers-body = a { $size } body
bin-answers-delay = after { $ms } ms
bin-form-line = headers, line { $line }: expected "Name: value", got { $got }
# The view link for a private bin, on its page.
bin-private-label = Private · view link
bin-private-hint = Only this link opens the bin's pages and API; the capture URL cannot. hookbin keeps only a hash of it: keep it safe.
bin-actions = Bin actions
bin-export-har = Export HAR
bin-export-json = Export JSON
bin-delete-short = Delete bin
bin-follow = Follow newest
