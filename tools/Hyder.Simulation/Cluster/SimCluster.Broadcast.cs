using Hyder.Log;

namespace Hyder.Simulation.Cluster;

/// <summary>Intention broadcast between the servers (<see cref="SimBroadcast"/>).</summary>
internal sealed partial class SimCluster
{
    private SimBroadcast? _broadcast;

    /// <summary>
    /// The broadcast transport, when the run has servers broadcast (<see cref="SimOptions.Broadcast"/>,
    /// or a profile that forges broadcast blocks).
    /// </summary>
    public SimBroadcast? Broadcast => Options.Broadcast || Options.Faults.BroadcastForge > 0 ? _broadcast ??= new SimBroadcast(this) : null;

    /// <summary>
    /// A token taken from the sequencer and never written, as by a client that crashed after its
    /// token: the position becomes a hole the readers fill. Null when the sequencer is down or not ready.
    /// </summary>
    public long? TokenNobodyWrites()
    {
        if (_sequencer is not { } sequencer)
        {
            return null;
        }

        var token = sequencer.Next(sequencer.Epoch, 1);
        if (token.Status != LogStatus.Ok)
        {
            return null;
        }

        Trace.Add($"token @{token.Address} taken and never written");
        return token.Address;
    }
}
