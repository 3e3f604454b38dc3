namespace Hyder.Fuzz.Engine;

/// <summary>
/// One decoder under test: a corpus of valid inputs made by the real encoder, a way to run the
/// decoder on bytes, and the exceptions its documentation allows. The oracle
/// (<see cref="FuzzRunner"/>) holds every case to: success, or one of those exceptions with a
/// message; never another exception, a hang, or allocation out of proportion to the input.
/// </summary>
public abstract class FuzzTarget : IDisposable
{
    private IReadOnlyList<Seed>? _corpus;

    /// <summary>The name used on the command line.</summary>
    public abstract string Name { get; }

    /// <summary>The decoder(s) the target drives, for <c>--list</c> and the docs.</summary>
    public abstract string Description { get; }

    /// <summary>The exception types a rejection may use (documented by the decoder).</summary>
    public abstract IReadOnlyList<Type> Documented { get; }

    /// <summary>The valid inputs mutations start from; built once, the same in every process.</summary>
    public IReadOnlyList<Seed> Corpus => _corpus ??= BuildCorpus().ToList();

    /// <summary>Whether <see cref="Fixup"/> does anything (the runner applies it to half the cases).</summary>
    public virtual bool HasFixup => false;

    /// <summary>Bytes a case may allocate: a constant plus a multiple of the input's length.</summary>
    public virtual long AllocationBound(int inputLength) => (512L << 10) + (256L * inputLength);

    /// <summary>Runs the decoder on <paramref name="input"/>, a mutation of <paramref name="seed"/>'s bytes.</summary>
    /// <remarks>Returns on success; throws on rejection. A decoder that reports failure by a return value is wrapped to throw <see cref="FuzzRejectionException"/>.</remarks>
    public abstract void Execute(byte[] input, Seed seed);

    /// <summary>Recomputes checksums in place so a mutation reaches the parser behind them.</summary>
    public virtual void Fixup(byte[] input, Seed seed)
    {
    }

    /// <summary>
    /// Whether <paramref name="e"/> is a rejection the decoder documents: one of
    /// <see cref="Documented"/> or a subclass, except that <see cref="ArgumentException"/> does not
    /// cover <see cref="ArgumentOutOfRangeException"/>, <see cref="ArgumentNullException"/> and
    /// <see cref="System.Text.DecoderFallbackException"/>: from inside a decoder those are a check it
    /// did not make, so a target lists them by name when they are what it documents.
    /// </summary>
    public bool IsDocumented(Exception e) =>
        e is FuzzRejectionException || Documented.Any(t => t == e.GetType() || (t.IsInstanceOfType(e) && !IsCheckNotMade(t, e)));

    private static bool IsCheckNotMade(Type documented, Exception e) =>
        documented == typeof(ArgumentException) && e is ArgumentOutOfRangeException or ArgumentNullException or System.Text.DecoderFallbackException;

    /// <summary>Builds the corpus (deterministically: no clock, no shared random, no hash order).</summary>
    protected abstract IEnumerable<Seed> BuildCorpus();

    /// <inheritdoc />
    public void Dispose()
    {
        Dispose(true);
        GC.SuppressFinalize(this);
    }

    /// <summary>Frees what the target holds (temporary directories, pools).</summary>
    protected virtual void Dispose(bool disposing)
    {
    }
}

/// <summary>A decoder said no through its return value (a false and an error, a status); the message is its error.</summary>
public sealed class FuzzRejectionException : Exception
{
    /// <summary>Creates the rejection.</summary>
    public FuzzRejectionException(string message) : base(message) { }

    /// <summary>Creates the rejection with the default message.</summary>
    public FuzzRejectionException() : base("rejected") { }

    /// <summary>Creates the rejection with an inner exception.</summary>
    public FuzzRejectionException(string message, Exception inner) : base(message, inner) { }

    /// <summary>Throws a rejection for <paramref name="error"/>; an empty error is itself unclear.</summary>
    public static void Throw(string? error) => throw new FuzzRejectionException(error ?? string.Empty);
}
