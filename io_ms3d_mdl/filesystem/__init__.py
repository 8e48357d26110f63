"""Models where users keep them: VPK (Valve's, and Troika's for Bloodlines) and GMA archives, games mounted
through ``gameinfo.txt`` (or, for Bloodlines, their packs), Steam libraries.

The bottom layer beside ``access``, ``budget`` and ``errors`` (no ``bpy``, imports nothing above it). ``access``
asks it about every path that passes through an archive; everything else asks ``access``.

Virtual paths
    An archive behaves as a folder: an entry's path is the archive file's path joined with the entry's name,
    ``<game>/tf2_misc_dir.vpk/models/x.mdl`` or ``<addons>/foo.gma/models/x.mdl``. Such a path can be given to
    every loader (``scene.load.load_source``/``load_ms3d``, the operators' ``filepath``, the CLI) like a file.
    ``os.path.dirname`` of it is a virtual folder; ``access.listing``, ``access.read_file`` and
    ``access.Confinement.find`` answer for it from the archive's directory.

API for the user interface (stable)
    ``mounts.mount_archive(path) -> archive.Archive``
        Mount (index) a ``.vpk`` (``x.vpk`` means ``x_dir.vpk``) or ``.gma``; cached per session by real path,
        size and mtime. Raises ``errors.FormatError`` for a file that is not a readable archive.
    ``mounts.mount_roots(mounts) -> tuple[str, ...]``
        The search roots a list of mounts means: a game folder (holding gameinfo.txt) → its ``game`` search paths
        in the engine's order; an archive → itself; another folder → itself.
    ``mounts.list_models(mounts, suffixes=(".mdl", ".ms3d")) -> Iterator[mounts.ModelEntry]``
        Every model in the mounted games and archives, as ``ModelEntry(path, name, label, mount, archive)``:
        ``path`` is what to import (virtual inside archives), ``name`` the model's name in its game
        (``models/x.mdl``), ``label`` the game's title or the archive's file name, ``mount`` the game folder or
        archive it came from, ``archive`` the archive file holding it (None for a loose file). A generator; the
        archives' indexes are cached, so a second listing costs only the walk over names. The models are charged
        to the ``listed_models`` budget before their names are made: ``errors.BudgetExceeded`` past it.
    ``mounts.label(mount) -> str``: a game's title (gameinfo ``game``) or the archive's / folder's name.
    ``steam.find_games(steam_folders=None) -> list[steam.InstalledGame(title, folder, install)]``
        Game folders holding gameinfo.txt in every Steam library (``libraryfolders.vdf``) of the given Steam
        installations, or of the platform's default ones (``steam.default_steam_folders()``) when None.
    ``gameinfo.read_gameinfo(folder) -> gameinfo.GameInfo(folder, title, search_paths, skipped, lines)``.

Passing mounts to an import
    ``SourceOptions.mounts`` and ``Ms3dOptions.mounts``: ``tuple[str, ...]`` of game folders and archive paths
    (the user's enabled games, in order). They are resolved with ``mount_roots`` and searched after the model's
    own folder and its own game's search paths, before ``search_roots``; confinement allows them all.
    CLI: ``--game DIR`` and ``--vpk ARCHIVE`` (repeatable) fill the same tuple.

Lookup order for a model's materials, textures, ``$includemodel``, ``.ani``: the model's game root (the folder
holding ``models/``: the archive itself for a model inside one), the ``game`` search paths of the game it lies in
(nearest folder above it, or above its archive, holding gameinfo.txt), then the mounts, then ``search_roots``.
"""
