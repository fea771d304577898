"""What a question says: text rewrites, tokens and word folding, spelling, rephrasings, matching.

Pure functions over strings (and the common-words list in data/): matching.normalize gives the
search key the store indexes claims by, matching.compare the test the gate decides with.
May import nothing of staffstore's; everything that reads questions imports it.
"""
