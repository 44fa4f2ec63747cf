## One request: the detail beside the list and on its own page.
