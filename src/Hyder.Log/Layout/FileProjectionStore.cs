namespace Hyder.Log.Layout;

/// <summary>
/// Projections as files of one directory (<c>projection-NNNNNNNNNNNNNNNNNNNN.json</c>) for a
/// single machine. The compare-and-swap holds an exclusive lock on <c>store.lock</c> (flock on
/// Unix) across processes; the new file is written, flushed and renamed into place, so a crash
/// leaves either no projection for the epoch or a whole one.
/// </summary>
public sealed class FileProjectionStore : IProjectionStore
{
    private const string Prefix = "projection-";
    private readonly string _directory;

    /// <summary>Uses (and creates) <paramref name="directory"/>.</summary>
    public FileProjectionStore(string directory)
    {
        Directory.CreateDirectory(directory);
        _directory = directory;
    }

    /// <inheritdoc />
    public async Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default)
    {
        var latest = LatestEpoch();
        if (latest == 0)
        {
            return null;
        }

        var json = await File.ReadAllTextAsync(PathOf(latest), cancellationToken).ConfigureAwait(false);
        return Projection.FromJson(json);
    }

    /// <inheritdoc />
    public async Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        projection.Validate();
        using var gate = await LockAsync(cancellationToken).ConfigureAwait(false);
        if (LatestEpoch() != projection.Epoch - 1)
        {
            return false;
        }

        var path = PathOf(projection.Epoch);
        var temporary = path + ".tmp";
        var bytes = System.Text.Encoding.UTF8.GetBytes(projection.ToJson());
        using (var handle = File.OpenHandle(temporary, FileMode.Create, FileAccess.Write))
        {
            RandomAccess.Write(handle, bytes, 0);
            RandomAccess.FlushToDisk(handle);
        }

        File.Move(temporary, path);
        Storage.DirectorySync.Flush(_directory);
        return true;
    }

    private long LatestEpoch()
    {
        long latest = 0;
        foreach (var path in Directory.EnumerateFiles(_directory, Prefix + "*.json"))
        {
            var name = Path.GetFileNameWithoutExtension(path);
            if (long.TryParse(name.AsSpan(Prefix.Length), out var epoch))
            {
                latest = Math.Max(latest, epoch);
            }
        }

        return latest;
    }

    private string PathOf(long epoch) => Path.Combine(_directory, $"{Prefix}{epoch:D20}.json");

    private async Task<FileStream> LockAsync(CancellationToken cancellationToken)
    {
        var path = Path.Combine(_directory, "store.lock");
        for (var delay = 1; ; delay = Math.Min(delay * 2, 50))
        {
            try
            {
                return new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
            }
            catch (IOException)
            {
                await Task.Delay(delay, cancellationToken).ConfigureAwait(false);
            }
        }
    }
}
