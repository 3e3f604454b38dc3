using System.Diagnostics;

namespace Hyder.Soak.Cluster;

/// <summary>Where one process of the cluster runs: its address, and a command prefix (such as <c>ip netns exec NS</c>).</summary>
/// <param name="Address">The IP address it listens on and peers reach it at.</param>
/// <param name="Prefix">Words put before its command line; empty to run it directly.</param>
public sealed record Placement(string Address, IReadOnlyList<string> Prefix)
{
    /// <summary>127.0.0.1, run directly.</summary>
    public static Placement Loopback { get; } = new("127.0.0.1", []);
}

/// <summary>The shape of a local cluster.</summary>
public sealed record LocalClusterOptions
{
    /// <summary>Where data, logs and the servers' (empty) configuration file go.</summary>
    public required string Directory { get; init; }

    /// <summary>Log units; a multiple of <see cref="Replicas"/>.</summary>
    public int Units { get; init; } = 2;

    /// <summary>Replicas per chain.</summary>
    public int Replicas { get; init; } = 2;

    /// <summary>Transaction servers.</summary>
    public int Servers { get; init; } = 2;

    /// <summary>The built hosts.</summary>
    public required HostBinaries Hosts { get; init; }

    /// <summary>Words added to every server's command line (for example <c>--checkpoint-every 2000</c>).</summary>
    public IReadOnlyList<string> ServerArguments { get; init; } = [];

    /// <summary>Words added to every log unit's command line (for example <c>--slots-per-segment 1024</c>).</summary>
    public IReadOnlyList<string> UnitArguments { get; init; } = [];

    /// <summary>Where each process runs (by name); loopback when null.</summary>
    public Func<string, Placement>? Place { get; init; }

    /// <summary>
    /// The endpoint (ADDRESS:PORT) others are given for a link in place of its own, such as a fault
    /// proxy's; called once per link when the cluster is laid out. Links: <c>projection</c>,
    /// <c>sequencer</c> and <c>unit-N</c> (as the log's projection and every log client name them),
    /// and <c>server-I-&gt;server-J</c> (server I's intention broadcast to server J). Direct when null.
    /// </summary>
    public Func<string, string, string>? Route { get; init; }
}

/// <summary>
/// A whole cluster of real processes on one machine, started as children of this process with the
/// command lines <c>deploy/local-cluster.sh</c> uses (projection store, sequencer, log units in
/// chains, servers with intention broadcast and <c>--spin yield</c>). Ports are picked free on
/// loopback once and kept, so a killed process restarts at the same address. Disposing stops every
/// process (SIGTERM, then SIGKILL).
/// </summary>
public sealed class LocalCluster : IAsyncDisposable
{
    private readonly List<ClusterProcess> _all = [];
    private string[] _advertised = [];
    private string _advertisedSequencer = "";

    private LocalCluster(LocalClusterOptions options) => Options = options;

    /// <summary>The options.</summary>
    public LocalClusterOptions Options { get; }

    /// <summary>The projection store.</summary>
    public ClusterProcess Projection { get; private set; } = null!;

    /// <summary>The sequencer.</summary>
    public ClusterProcess Sequencer { get; private set; } = null!;

    /// <summary>The log units, unit-1 first.</summary>
    public IReadOnlyList<ClusterProcess> Units { get; private set; } = [];

    /// <summary>The transaction servers, server-1 first.</summary>
    public IReadOnlyList<ClusterProcess> Servers { get; private set; } = [];

    /// <summary>Every process, in start order.</summary>
    public IReadOnlyList<ClusterProcess> All => _all;

    /// <summary>The servers' client connection strings.</summary>
    public IReadOnlyList<string> ConnectionStrings => Servers.Select(s => $"Endpoint={s.Endpoint}").ToArray();

    /// <summary>Lays out the processes (without starting them).</summary>
    public static LocalCluster Create(LocalClusterOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (options.Units < 1 || options.Replicas < 1 || options.Units % options.Replicas != 0)
        {
            throw new ArgumentException($"units ({options.Units}) must be a positive multiple of replicas ({options.Replicas})", nameof(options));
        }

        if (options.Servers < 1)
        {
            throw new ArgumentException("at least one server", nameof(options));
        }

        var cluster = new LocalCluster(options);
        cluster.Layout();
        return cluster;
    }

    /// <summary>The data directory of <paramref name="process"/> (the projection store and the log units keep files); null for the sequencer and the servers, which keep none.</summary>
    public string? DataDirectory(ClusterProcess process)
    {
        ArgumentNullException.ThrowIfNull(process);
        return process.Role is ProcessRole.Projection or ProcessRole.Unit ? Path.Combine(Options.Directory, "data", process.Name) : null;
    }

    /// <summary>Starts the projection store, the units, the sequencer, bootstraps the log (one chain per <see cref="LocalClusterOptions.Replicas"/> units), then the servers.</summary>
    public async Task StartAsync(CancellationToken cancellationToken = default)
    {
        try
        {
            await Projection.StartAsync(cancellationToken).ConfigureAwait(false);
            await Task.WhenAll(Units.Select(u => u.StartAsync(cancellationToken))).ConfigureAwait(false);
            await Sequencer.StartAsync(cancellationToken).ConfigureAwait(false);
            await BootstrapAsync(cancellationToken).ConfigureAwait(false);
            await Task.WhenAll(Servers.Select(s => s.StartAsync(cancellationToken))).ConfigureAwait(false);
        }
        catch
        {
            await StopAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Starts every process that does not run (after kills).</summary>
    public async Task StartStoppedAsync(CancellationToken cancellationToken = default)
    {
        foreach (var process in _all.Where(p => !p.IsRunning))
        {
            await process.StartAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Stops every process, servers first (SIGTERM, SIGKILL after 10 s).</summary>
    public async Task StopAsync()
    {
        foreach (var process in Enumerable.Reverse(_all))
        {
            await process.StopAsync(TimeSpan.FromSeconds(10)).ConfigureAwait(false);
        }
    }

    public async ValueTask DisposeAsync()
    {
        await StopAsync().ConfigureAwait(false);
        foreach (var process in _all)
        {
            await process.DisposeAsync().ConfigureAwait(false);
        }
    }

    private void Layout()
    {
        var o = Options;
        Directory.CreateDirectory(Path.Combine(o.Directory, "logs"));
        var config = Path.Combine(o.Directory, "server.json");
        if (!File.Exists(config))
        {
            File.WriteAllText(config, "{}\n");
        }

        var place = o.Place ?? (_ => Placement.Loopback);
        var ports = new PortPicker();
        Placement projectionPlace = place("projection");
        var projectionPort = ports.Pick(projectionPlace);
        string Route(string link, string endpoint) => o.Route?.Invoke(link, endpoint) ?? endpoint;
        var projectionStore = $"tcp:{Route("projection", $"{projectionPlace.Address}:{projectionPort}")}";

        ClusterProcess Log(string name, Placement at, int port, params string[] roleArguments)
        {
            // Plaintext between members, said explicitly (docs/security.md): a test cluster on loopback or namespaces it made.
            string[] command = [.. at.Prefix, "dotnet", o.Hosts.LogHost, .. roleArguments, "--listen", at.Address, "--port", Port(port), "--log-format", "simple", "--cluster-allow-plaintext"];
            var role = name == "projection" ? ProcessRole.Projection : name == "sequencer" ? ProcessRole.Sequencer : ProcessRole.Unit;
            return new ClusterProcess(name, role, at.Address, port, command, Path.Combine(o.Directory, "logs", name + ".log"));
        }

        Projection = Log("projection", projectionPlace, projectionPort, "--role", "projection", "--data", Data("projection"));
        var units = new List<ClusterProcess>();
        for (var i = 1; i <= o.Units; i++)
        {
            var name = $"unit-{i}";
            var at = place(name);
            units.Add(Log(name, at, ports.Pick(at), ["--role", "unit", "--data", Data(name), .. o.UnitArguments]));
        }

        Units = units;
        var sequencerPlace = place("sequencer");
        Sequencer = Log("sequencer", sequencerPlace, ports.Pick(sequencerPlace), "--role", "sequencer", "--projection-store", projectionStore);
        _advertised = [.. units.Select(u => Route(u.Name, u.Endpoint))];
        _advertisedSequencer = Route("sequencer", Sequencer.Endpoint);

        var serverPlaces = Enumerable.Range(1, o.Servers).Select(i => place($"server-{i}")).ToArray();
        var grpcPorts = serverPlaces.Select(ports.Pick).ToArray();
        var broadcastPorts = serverPlaces.Select(ports.Pick).ToArray();
        var servers = new List<ClusterProcess>();
        for (var i = 0; i < o.Servers; i++)
        {
            var at = serverPlaces[i];
            var name = $"server-{i + 1}";
            var command = new List<string>(at.Prefix)
            {
                "dotnet", o.Hosts.Server, "--log", projectionStore, "--server-id", name, "--listen", $"http://{at.Address}:{grpcPorts[i]}",
                "--broadcast-listen", $"{at.Address}:{broadcastPorts[i]}", "--cluster-id", $"local-{projectionPort}", "--spin", "yield", "--log-format", "simple",

                // Cleartext clients and members, and no credentials: a test cluster whose addresses
                // (loopback, or network namespaces the test made) no one else reaches (docs/security.md).
                "--cluster-allow-plaintext", "--allow-plaintext", "--anonymous", "admin",
            };
            for (var p = 0; p < o.Servers; p++)
            {
                if (p != i)
                {
                    command.AddRange(["--peer", Route($"server-{i + 1}->server-{p + 1}", $"{serverPlaces[p].Address}:{broadcastPorts[p]}")]);
                }
            }

            command.AddRange(["--config", config, .. o.ServerArguments]);
            servers.Add(new ClusterProcess(name, ProcessRole.Server, at.Address, grpcPorts[i], command, Path.Combine(o.Directory, "logs", name + ".log")));
        }

        Servers = servers;
        _all.Add(Projection);
        _all.AddRange(Units);
        _all.Add(Sequencer);
        _all.AddRange(Servers);

        string Data(string name) => Path.Combine(o.Directory, "data", name);
    }

    private async Task BootstrapAsync(CancellationToken cancellationToken)
    {
        var o = Options;
        var info = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        info.Environment["DOTNET_EnableDiagnostics"] = "0";
        foreach (var word in (string[])[o.Hosts.LogHost, "admin", "--cluster-allow-plaintext", "--projection-store", $"tcp:{Projection.Endpoint}", "bootstrap", "--sequencer", _advertisedSequencer])
        {
            info.ArgumentList.Add(word);
        }

        for (var c = 0; c < o.Units / o.Replicas; c++)
        {
            info.ArgumentList.Add("--chain");
            info.ArgumentList.Add(string.Join(',', _advertised.Skip(c * o.Replicas).Take(o.Replicas)));
        }

        using var admin = Process.Start(info) ?? throw new InvalidOperationException("could not start hyder-log admin");
        var stdout = admin.StandardOutput.ReadToEndAsync(cancellationToken);
        var stderr = admin.StandardError.ReadToEndAsync(cancellationToken);
        await admin.WaitForExitAsync(cancellationToken).WaitAsync(TimeSpan.FromSeconds(60), cancellationToken).ConfigureAwait(false);
        await File.WriteAllTextAsync(Path.Combine(o.Directory, "logs", "bootstrap.json"), await stdout.ConfigureAwait(false), cancellationToken).ConfigureAwait(false);
        if (admin.ExitCode != 0)
        {
            throw new InvalidOperationException($"hyder-log admin bootstrap failed ({admin.ExitCode}): {await stderr.ConfigureAwait(false)}");
        }
    }

    private static string Port(int port) => port.ToString(System.Globalization.CultureInfo.InvariantCulture);

    /// <summary>
    /// Ports for the processes, fixed for the cluster's life (a restarted process comes back on
    /// its port, and projections name units by it): on this machine's loopback, ports from
    /// <see cref="Hyder.Testing.ReservedPorts"/>, below the ephemeral range and locked against
    /// other processes that use it, so neither a reconnect's source port nor a parallel test takes
    /// one while its process is down; inside a namespace of its own (a prefix), counted up from
    /// 17100, since nothing else listens there.
    /// </summary>
    private sealed class PortPicker
    {
        private int _next = 17100;

        public int Pick(Placement at) => at.Prefix.Count > 0 ? _next++ : Hyder.Testing.ReservedPorts.Take();
    }
}
