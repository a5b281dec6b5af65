"""Shared by lab/sweep-random.sh and lab/sweep-changes.sh: writes one
drawn path set as lab files, the whole set and each path alone."""


def write_set(out, name, seed, paths, note=None):
    """Writes OUT/NAME.toml with every path (TOML `[[path]]` tables) and
    OUT/NAME_p<i>.toml with path i alone; `note` goes on the third line
    as a comment (what the set has, printed by compare_sets)."""
    def head(n):
        h = f'name = "{n}"\nseed = {seed}\n'
        return h + (f'# {note}\n' if note else '')
    with open(f'{out}/{name}.toml', 'w') as f:
        f.write(head(name) + '\n' + '\n\n'.join(paths) + '\n')
    for i, p in enumerate(paths):
        with open(f'{out}/{name}_p{i}.toml', 'w') as f:
            f.write(head(f'{name}_p{i}') + '\n' + p + '\n')
