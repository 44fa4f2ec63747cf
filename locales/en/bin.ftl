## The bin page (/bins/{bin}).
