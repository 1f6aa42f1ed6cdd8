"""Moving finished games to the archive tier (``spades archive``).

A pass looks at every game of every partition stream whose last commit is older than a given
time: a game whose history holds its end (``game_ended``) is moved. For each, in this order:

1. its whole history is read (:class:`~services.runtime.game_stream.GameStream`: what an
   earlier pass archived included), and packed (:mod:`services.runtime.game_archive`);
2. it is appended to the archive stream, on the game's archive subject, expected to follow the
   archived history there was (none, or an earlier pass's), under a message id made of the game
   and its last commit's sequence (a retry is deduplicated);
3. it is read back from the archive and compared, commit by commit, with the history read;
4. only then is the game's subject of its partition stream purged up to, not including, its
   last commit (a JetStream purge by subject and sequence): that commit stays in place (see
   :mod:`services.runtime.game_archive` for why), and anything appended after the history was
   read (a late command's refusal) is left too.

So every crash leaves a state a pass resumes from. Before (2): nothing changed. Between (2) and
(4): the stream still holds the whole history, which every reader reads as before; the next
pass finds the archived history ending where the stream's does, checks it and purges. A history
is never purged without an archived copy read back equal, and a purge removes only commits
below the archived last one. A game still being played is never moved: its history holds no
end. What a pass does not move is said: a stream made before archiving, which denies purges
(JetStream will not lift that: a restore from a backup makes the stream anew), or a history too
long for one archive message.
"""
