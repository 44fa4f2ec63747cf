## One request: the detail beside the list and on its own page.

req-title = { $method } request · hookbin
req-bin = Bin
req-received = Received
req-from = From
req-protocol = Protocol
req-body = Body
req-type = Type
req-truncated = Truncated.
# $size and $stored are byte counts ("1,234 bytes").
req-truncated-detail = The body was { $size }, more than this server keeps; only the first { $stored } were stored and are shown.
req-back = ← Back to the bin
req-open = Open on its own page
req-download = Download body
req-json = As JSON
req-delete-confirm = Delete this request?
req-delete = Delete
req-query = Query parameters
req-none = None.
req-name = Name
req-value = Value
req-headers = Headers
req-not-utf8 = not UTF-8
req-not-utf8-hint = Bytes that are not UTF-8 are shown as �
req-show-all = show all
req-empty = Empty.
req-body-view = Body view
req-field = Field
req-no-parts = No parts could be read.
req-part-name = Field name
req-part-no-name = no name
req-part-file = File name
req-part-incomplete = incomplete
req-part-incomplete-hint = The body ends inside this part
req-part-download = Download
req-curl = Copy as curl
# $size is a size such as "2.1 MiB".
req-curl-large = The command is { $size } long (it carries the whole body), so it is not shown here.
req-curl-copy-large = Copy the command
req-curl-download = Download it as a script
req-curl-truncated = The body was cut at capture: this command sends only the stored { $stored }.
req-curl-target = Aim it at
req-curl-update = Update
req-verify = Verify signature
req-verify-valid = Valid signature
req-verify-invalid = Not a valid signature
req-verify-fresh = The timestamp is within the tolerance.
req-verify-stale = The timestamp is outside the tolerance: an old or replayed request, or a clock difference.
# What the signature covers, in the verifier's (English) words.
req-verify-signed = Signed:
# $problem is the verifier's explanation, in English.
req-verify-error = Cannot check: { $problem }
req-verify-secret = Secret
req-verify-scheme = Scheme
req-verify-detect = Detect from the headers
req-verify-button = Verify
req-verify-hint = The secret is used for this one check; it is not stored or logged.
# Body views (tabs) and what a body is.
req-tab-pretty = Pretty
req-tab-raw = Raw
req-tab-hex = Hex
req-tab-raw-hex = Raw (hex)
req-tab-sent-hex = As sent (hex)
req-tab-parts = Parts
req-tab-fields = Fields
req-kind-json = JSON
req-kind-xml = XML
req-kind-form = form
req-kind-text = text
req-kind-binary = binary
req-kind-multipart = multipart
req-kind-empty = empty
# Notes on a body view. $more is req-more-pane or req-more-page; $error and $codings are the
# decoder's own (English) words.
req-more-pane = Open the request on its own page for more, or download the body.
req-more-page = Download the body for all of it.
req-note-clip = Showing the first { $shown } of { $total }. { $more }
req-note-decoded = Decoded from { $codings }: { $sizes }.
req-note-decode-cut = Decoded from { $codings }, cut at { $limit } (--max-decoded-bytes): the body decodes to more than that, likely a decompression bomb. Shown: its start.
req-note-not-decoded = Content-Encoding not undone ({ $error }): shown as sent.
req-note-decode-damaged = Decoded from { $codings } up to damage ({ $error }): { $sizes }. Shown: what decoded.
req-note-large-json = A large body: the first { $size } of it pretty-printed, not checked as a whole (Raw and the download are exact). { $more }
req-note-pretty-clip = Showing the first { $size } of the pretty-printed text. { $more }
req-note-json-bad = Declared as JSON but does not parse: { $error }.
req-note-xml-clip = Showing the first { $size } of the re-indented text. { $more }
req-note-xml-bad = Declared as XML but does not parse: { $error }.
req-note-fields-clip = Showing the first fields only. { $more }
req-note-not-utf8 = Not valid UTF-8: shown as a hex dump.
req-note-binary = Binary content: shown as a hex dump.
req-note-unescape = Pretty shows \uXXXX escapes as the characters they stand for; Raw has the bytes as sent.
req-part-not-previewed = Not previewed: the page shows enough already. Download it.
req-part-start = Showing the start of its { $size }. Download it for all of it.
req-copy-body = Copy body
req-verify-tolerance = Tolerance (s)
req-verify-at-capture = Check as of capture time
req-verify-valid-stale = Valid signature, but older than the tolerance
req-verify-fresh-capture = The timestamp is within the tolerance of the capture time.
req-verify-stale-hint = Tick “Check as of capture time” to judge it by when it arrived.
# What hookbin answered the request; the reason phrase ("Too Many Requests") stays as HTTP has it.
req-answer = Response sent
req-answer-body = body { $size }
req-answer-delay = after a { $ms } ms delay
req-answer-none = Not recorded: this request was captured before hookbin kept its answers.
