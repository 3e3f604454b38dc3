namespace Hyder.Ycsb.Driver;

/// <summary>How the driver runs a phase: concurrency, pacing and when to stop.</summary>
internal sealed record DriverSettings
{
    /// <summary>Worker threads; each has its own key choosers, random stream and recorder.</summary>
    public int Threads { get; init; } = 1;

    /// <summary>Transactions each worker keeps in flight, each on its own session.</summary>
    public int InFlightPerThread { get; init; } = 1;

    /// <summary>Transactions per second over all workers; 0 for as fast as possible.</summary>
    public double TargetThroughput { get; init; }

    /// <summary>Time run before measuring; its transactions are not reported.</summary>
    public TimeSpan Warmup { get; init; }

    /// <summary>How long to measure; null when <see cref="OperationCount"/> ends the run.</summary>
    public TimeSpan? Duration { get; init; }

    /// <summary>Measured transactions to run; null when <see cref="Duration"/> ends the run.</summary>
    public long? OperationCount { get; init; }

    /// <summary>Retries of an aborted transaction before it is given up (each abort is counted).</summary>
    public int MaxRetries { get; init; } = 10;

    public ulong Seed { get; init; } = 1;

    public int KeySize { get; init; } = 4;

    public int ValueSize { get; init; } = 1024;

    /// <summary>YCSB's <c>insertorder</c>: hashed (default) or ordered key numbers.</summary>
    public bool HashedKeys { get; init; } = true;

    /// <summary>Seconds between status lines.</summary>
    public TimeSpan StatusInterval { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>Records inserted per load transaction.</summary>
    public int LoadBatch { get; init; } = 100;

    /// <summary>
    /// Run each transaction made only of reads and updates of ordinary records as one request
    /// (<see cref="Targets.ITargetSession.RunOneShotAsync"/>) where the target can.
    /// </summary>
    public bool OneShot { get; init; }

    /// <summary>
    /// Pipeline the independent operations of an interactive transaction made only of reads and
    /// updates of ordinary records (<see cref="Targets.ITargetSession.RunPipelinedAsync"/>) where the
    /// target can (<c>--connect</c>); false (<c>--no-pipeline</c>) sends them one at a time.
    /// </summary>
    public bool Pipeline { get; init; } = true;

    public int Sessions => Threads * InFlightPerThread;
}
